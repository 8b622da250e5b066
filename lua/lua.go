// Package lua holds gmq's Redis scripts, one file per job transition, embedded
// into the binary. It owns nothing else: package pool decides when each runs.
//
// Every script that works on a topic shares the KEYS layout and record of
// contract.lua (generated from contract.go) and the helpers of lib.lua,
// which Source prepends (and whose deferred writes it flushes after
// the script's body); each file's header says what its KEYS and ARGV are and
// what it returns.
package lua

import (
	"embed"
	"fmt"
	"strings"
)

//go:embed *.lua
var files embed.FS

// standalone scripts do not use the shared prelude (Prelude); its own
// files are listed too.
var standalone = map[string]bool{"due_topics": true, "claim_alias": true, "drop_alias": true, "settings": true, "contract": true,
	"lib": true, "lib_topics": true, "lib_jobs": true, "lib_failures": true, "lib_limits": true, "lib_groups": true,
	"history": true, "next_ids": true, "announce": true, "topic_index": true, "topic_patterns": true, "unlock": true}

// Source returns the full text of the named script (without ".lua") as a
// script: a topic-scoped one after the Prelude, begun and flushed. It panics on an unknown name:
// the names are fixed at compile time and covered by tests.
func Source(name string) string {
	body, err := files.ReadFile(name + ".lua")
	if err != nil {
		panic(fmt.Sprintf("lua: no script %q: %v", name, err))
	}
	if standalone[name] {
		if row := argsTable(name); row != "" {
			return "local A = " + row + "\n" + string(body) // its arguments by name (ScriptArgs)
		}
		return string(body)
	}
	// The body runs as a function so that, however it returns, lib.lua's
	// deferred writes are flushed after it; contract.lua's KEYS and ARGV
	// hide the script's own, which begin hands over. A script that ends by
	// calling its main is split as in the library (hoist): wrapped whole,
	// batch.lua's body would be one function with more than Lua's 60
	// upvalues.
	head := "local SCRIPT_KEYS, SCRIPT_ARGV = KEYS, ARGV\n" + Prelude()
	tail := "\nbegin(SCRIPT_KEYS, SCRIPT_ARGV)\nlocal result = script_main()\nflush()\nreturn result\n"
	if defs, hoisted := hoist(string(body)); hoisted {
		return head + "\nlocal script_main\ndo\n" + argsLocal(name) + defs + "\nscript_main = main\nend" + tail
	}
	return head + "\nlocal function script_main()\n" + argsLocal(name) + string(body) + "\nend" + tail
}

// libFiles hold the helpers every topic-scoped script shares, in the order
// they are defined (each may use those before it).
var libFiles = []string{"lib.lua", "lib_topics.lua", "lib_groups.lua", "lib_jobs.lua", "lib_failures.lua", "lib_limits.lua", "lib_lean.lua"}

// Prelude is contract.lua and the lib files: what every topic-scoped
// script's body follows, defined once in the library.
func Prelude() string {
	var b strings.Builder
	b.WriteString(read(ContractFile))
	for _, f := range libFiles {
		b.WriteString("\n")
		b.WriteString(read(f))
	}
	return b.String()
}
