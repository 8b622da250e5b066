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
)

//go:embed *.lua
var files embed.FS

// standalone scripts do not use lib.lua's layout.
var standalone = map[string]bool{"due_topics": true, "claim_alias": true, "drop_alias": true, "settings": true, "lib": true, "contract": true,
	"history": true, "next_ids": true, "topic_index": true}

// Source returns the full text of the named script (without ".lua"), with
// lib.lua prepended where the script uses it. It panics on an unknown name:
// the names are fixed at compile time and covered by tests.
func Source(name string) string {
	body, err := files.ReadFile(name + ".lua")
	if err != nil {
		panic(fmt.Sprintf("lua: no script %q: %v", name, err))
	}
	if standalone[name] {
		return string(body)
	}
	contract, err := files.ReadFile(ContractFile)
	if err != nil {
		panic(fmt.Sprintf("lua: %s: %v (go generate ./lua)", ContractFile, err))
	}
	lib, err := files.ReadFile("lib.lua")
	if err != nil {
		panic(fmt.Sprintf("lua: lib.lua: %v", err))
	}
	// The body runs as a function so that, however it returns, lib.lua's
	// deferred writes are flushed after it; contract.lua's KEYS and ARGV
	// hide the script's own, which begin hands over.
	return "local SCRIPT_KEYS, SCRIPT_ARGV = KEYS, ARGV\n" + string(contract) + "\n" + string(lib) +
		"\nbegin(SCRIPT_KEYS, SCRIPT_ARGV)\nlocal function main()\n" + string(body) +
		"\nend\nlocal result = main()\nflush()\nreturn result\n"
}
