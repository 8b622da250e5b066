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
var standalone = map[string]bool{"add_totals": true, "due_topics": true, "claim_alias": true, "drop_alias": true, "settings": true, "contract": true,
	"lib": true, "lib_events": true, "lib_topics": true, "lib_jobs": true, "lib_failures": true, "lib_outcomes": true, "lib_deps": true, "lib_limits": true, "lib_groups": true, "lib_lean": true, "lib_plain": true,
	"history": true, "next_ids": true, "announce": true, "topic_index": true, "topic_patterns": true, "unlock": true, "status": true}

// Source returns the full text of the named standalone script (without
// ".lua"), or of one of the Prelude's files. A topic-scoped script runs only
// as a function of the library (TheLibrary), where the Prelude is defined
// once: Source panics on its name, as on an unknown one (the names are
// fixed at compile time and covered by tests).
func Source(name string) string {
	body, err := files.ReadFile(name + ".lua")
	if err != nil {
		panic(fmt.Sprintf("lua: no script %q: %v", name, err))
	}
	if standalone[name] {
		// A standalone script has no contract.lua: it is given its own
		// arguments' row (ScriptArgs) and the statuses it replies with.
		var head string
		if row := argsTable(name); row != "" {
			head += "local A = " + row + "\n"
		}
		if used := statusesOf(string(body)); len(used) > 0 {
			head += "local R = " + statusTable(used) + "\n"
		}
		if used := repliesOf(string(body)); len(used) > 0 {
			table, err := replyTable(used)
			if err != nil {
				panic(fmt.Sprintf("lua: %s: %v", name, err))
			}
			head += table
		}
		return head + string(body)
	}
	panic(fmt.Sprintf("lua: %s is a topic-scoped script: call it as a function of the library (lua.TheLibrary)", name))
}

// libFiles hold the helpers every topic-scoped script shares, in the order
// they are defined (each may use those before it).
var libFiles = []string{"lib.lua", "lib_events.lua", "lib_topics.lua", "lib_groups.lua", "lib_jobs.lua", "lib_failures.lua", "lib_outcomes.lua", "lib_deps.lua", "lib_limits.lua", "lib_lean.lua", "lib_plain.lua"}

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
