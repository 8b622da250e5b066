package lua

import (
	"regexp"
	"slices"
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
	for _, file := range libFiles {
		// groups, jobbody, gathers, outcomes, lean, deps and plain are tables
		// of functions, deferred one of per-call fields; the per-call fields
		// of the first three and of deferred are set by begin (the others
		// have none).
		checkStateIsReset(t, file, read(file), begin, "lib.lua's begin", "ORIGIN", "groups", "jobbody", "gathers", "outcomes", "lean", "deps", "plain", "deferred")
	}
}

// The same for a script whose functions the library defines once (hoist):
// what it keeps for a call is set by its main.
func TestScriptStateIsPerCall(t *testing.T) {
	hoisted := 0
	for _, name := range Scripts() {
		text := scriptText(name)
		if _, ok := hoist(text); !ok {
			continue
		}
		hoisted++
		main := text[strings.Index(text, "local function main("):]
		checkStateIsReset(t, name+".lua", text, main, "its main", "rules") // rules: batch_push.lua's table of functions
	}
	if hoisted == 0 {
		t.Error("no script is hoisted: batch.lua should be")
	}
}

// checkStateIsReset fails for each top-level variable of file (its text)
// that is neither a constant nor assigned in reset (the text from the
// function that starts each call); exempt names are set otherwise.
func checkStateIsReset(t *testing.T, file, text, reset, resetName string, exempt ...string) {
	t.Helper()
	constant := regexp.MustCompile(`^local [A-Z][A-Z0-9_]* = ('[^']*'|\d+)\s*(--.*)?$`)
	declared := regexp.MustCompile(`^local ([a-z][a-zA-Z0-9_]*(?:, [a-z][a-zA-Z0-9_]*)*)\s*(--.*)?$`)
	for i, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "local ") || strings.HasPrefix(line, "local function ") || constant.MatchString(line) {
			continue
		}
		m := declared.FindStringSubmatch(line)
		if m == nil && exemptLine(line, exempt) {
			continue
		}
		if m == nil {
			t.Errorf("%s:%d: %q: a constant's value must be a literal; a call's state is declared bare and set by %s", file, i+1, line, resetName)
			continue
		}
		for _, name := range strings.Split(m[1], ", ") {
			// A slot for a function a block defines (function name(...)) is
			// set once, when the library loads: not a call's state.
			if regexp.MustCompile(`(?m)^\s*function ` + name + `\(`).MatchString(text) {
				continue
			}
			if !regexp.MustCompile(`\b` + name + `\b[^\n]*=`).MatchString(reset) {
				t.Errorf("%s:%d: %s does not reset %s", file, i+1, resetName, name)
			}
		}
	}
}

func exemptLine(line string, names []string) bool {
	for _, n := range names {
		if strings.HasPrefix(line, "local "+n) {
			return true
		}
	}
	return false
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

// TestLibraryFilesAreNotScripts: the Prelude's files are defined once, at
// the library's start, never registered as functions of their own.
func TestLibraryFilesAreNotScripts(t *testing.T) {
	for _, f := range append([]string{ContractFile}, libFiles...) {
		name := strings.TrimSuffix(f, ".lua")
		if slices.Contains(Scripts(), name) {
			t.Errorf("%s is registered as a function of the library", name)
		}
	}
}

// The plain scripts run without begin (plainScripts), so they may call
// only what keeps nothing of a call: Redis, Lua's own libraries, the
// library's pure functions and lib_plain.lua's. A helper that reads a
// call's state, which begin resets (now_ms's clock, topic_config's
// settings, count's sums, wake's wake-ups...), would read another call's.
// bind is allowed: it sets the call's keys, as every plain call begins
// (pop_best_plain.lua binds each bucket's in turn).
func TestPlainScriptsUseNoCallState(t *testing.T) {
	pure := map[string]bool{"redis.call": true, "cmsgpack.pack": true, "cmsgpack.unpack": true, "tonumber": true,
		"string.find": true, "string.match": true, "string.gmatch": true, "math.floor": true, "ipairs": true, "main": true,
		"new_record": true, "settle": true, "caller_of": true, "topic_keys": true, "reply": true, "add_topic": true,
		"goes_before": true, "bind": true, "unpack": true}
	called := regexp.MustCompile(`\b([A-Za-z_][A-Za-z0-9_.]*)\(`)
	// OP_ARGS.push.record (lib_jobs.lua), which push_plain.lua calls, is checked with them.
	pure["OP_ARGS.push.record"] = true
	codes := map[string]string{"lib_jobs.lua's OP_ARGS.push.record": pushRecordCode(t), "lib_plain.lua": codeOf(read("lib_plain.lua"))}
	for name := range plainScripts {
		codes[name+".lua"] = codeOf(read(name + ".lua"))
	}
	for file, code := range codes {
		for _, m := range called.FindAllStringSubmatch(code, -1) {
			if name := m[1]; !pure[name] && !strings.HasPrefix(name, "plain.") && !strings.HasPrefix(name, "REPLY.") {
				t.Errorf("%s calls %s, which the plain path does not know to keep nothing of a call", file, name)
			}
		}
	}
}
