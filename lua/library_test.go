package lua

import (
	"regexp"
	"strings"
	"testing"
)

// A library is loaded once and called many times, so the lib files may
// keep nothing of one call for the next: each of their top-level variables is a
// constant (UPPER_CASE, a literal) or is declared without a value and set
// by begin at the start of every call.
func TestLibStateIsPerCall(t *testing.T) {
	begin := read("lib.lua")
	begin = begin[strings.Index(begin, "local function begin("):]
	constant := regexp.MustCompile(`^local [A-Z][A-Z0-9_]* = ('[^']*'|\d+)\s*(--.*)?$`)
	declared := regexp.MustCompile(`^local ([a-z][a-zA-Z0-9_]*(?:, [a-z][a-zA-Z0-9_]*)*)\s*(--.*)?$`)
	for _, file := range libFiles {
		for i, line := range strings.Split(read(file), "\n") {
			if !strings.HasPrefix(line, "local ") || strings.HasPrefix(line, "local function ") || constant.MatchString(line) {
				continue
			}
			m := declared.FindStringSubmatch(line)
			if m == nil && strings.HasPrefix(line, "local ORIGIN") {
				continue // begin sets it from ARGV
			}
			if m == nil {
				t.Errorf("%s:%d: %q: a constant's value must be a literal; a call's state is declared bare and set by begin", file, i+1, line)
				continue
			}
			for _, name := range strings.Split(m[1], ", ") {
				if !regexp.MustCompile(`\b` + name + `\b[^\n]*=`).MatchString(begin) {
					t.Errorf("%s:%d: lib.lua's begin does not reset %s", file, i+1, name)
				}
			}
		}
	}
}

// The library registers every topic-scoped script as a function, batch
// twice, each with its flags, under a name that changes with its code.
func TestLibrary(t *testing.T) {
	lib := TheLibrary()
	if !regexp.MustCompile(`^gmq_[0-9a-f]{12}$`).MatchString(lib.Name) || !strings.HasPrefix(lib.Code, "#!lua name="+lib.Name+"\n") {
		t.Fatalf("library %q starts %q", lib.Name, lib.Code[:40])
	}
	for _, s := range append(Scripts(), "batch"+FreeSuffix) {
		if !strings.Contains(lib.Code, "function_name = '"+lib.Function(s)+"'") {
			t.Errorf("%s is not registered", s)
		}
	}
	for _, want := range []string{
		"function_name = '" + lib.Function("batch") + "', flags = {},",
		"function_name = '" + lib.Function("batch_free") + "', flags = {'allow-oom'},",
		"function_name = '" + lib.Function("topic_stats") + "', flags = {'no-writes'},",
		"function_name = '" + lib.Function("fail") + "', flags = {'allow-oom'},",
	} {
		if !strings.Contains(lib.Code, want) {
			t.Errorf("the library has no %q", want)
		}
	}
	if len(Scripts()) < 20 || strings.Contains(strings.Join(Scripts(), " "), "history") {
		t.Errorf("scripts %v", Scripts())
	}
}
