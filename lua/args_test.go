package lua

import (
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestScriptsReadArgumentsByName: no script reads ARGV by a number, every
// argument a script's row names is read by it, and every A.<name> a script
// reads is in its row (ScriptArgs).
func TestScriptsReadArgumentsByName(t *testing.T) {
	numbered := regexp.MustCompile(`ARGV\[\d`)
	used := regexp.MustCompile(`\bA\.(\w+)(?:\.(\w+))?`)
	for _, file := range luaFiles(t) {
		name := scriptOf(file)
		code := codeOf(read(file))
		if numbered.MatchString(code) {
			t.Errorf("%s reads ARGV by a number: %q", file, numbered.FindString(code))
		}
		rows := rowsOf(name)
		for _, m := range used.FindAllStringSubmatch(code, -1) {
			if !known(rows, m[1], m[2]) {
				t.Errorf("%s reads A.%s %s, which its ScriptArgs rows do not name", file, m[1], m[2])
			}
		}
		if scriptOf(file)+".lua" != file {
			continue // a part of a script: its whole is checked below
		}
		if parts, ok := scriptFiles[name]; ok {
			code = ""
			for _, part := range parts {
				code += codeOf(read(part))
			}
		}
		if strings.Contains(code, "OP_ARGS.push.record(ARGV, 0, A,") {
			// its row handed whole to the record builder, which reads P.<name>
			code += pushRecordCode(t)
		}
		for mode, names := range rows {
			for _, n := range names {
				n = strings.TrimSuffix(n, "...")
				if !strings.Contains(code, "."+n) && !strings.Contains(code, "'"+n+"'") {
					t.Errorf("%s never reads its argument %q (%s)", file, n, mode)
				}
			}
		}
	}
}

// rowsOf are script's ScriptArgs rows by mode ("" for a script of one).
func rowsOf(script string) map[string][]string {
	rows := map[string][]string{}
	for key, names := range ScriptArgs {
		name, mode, _ := strings.Cut(key, " ")
		if name == script {
			rows[mode] = names
		}
	}
	return rows
}

// known says whether A.first(.second) names an argument of rows.
func known(rows map[string][]string, first, second string) bool {
	has := func(names []string, n string) bool {
		return slices.Contains(names, n) || slices.Contains(names, n+"...")
	}
	if names, ok := rows[""]; ok {
		return has(names, first)
	}
	if first == "mode" {
		return len(rows) > 0
	}
	names, ok := rows[first]
	return ok && (second == "" || has(names, second))
}

// codeOf is Lua source without its comments.
func codeOf(src string) string {
	var b strings.Builder
	for _, line := range strings.Split(src, "\n") {
		if i := strings.Index(line, "--"); i >= 0 {
			line = line[:i]
		}
		b.WriteString(line)
		b.WriteString("\n")
	}
	return b.String()
}

func luaFiles(t *testing.T) []string {
	t.Helper()
	entries, err := files.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".lua") {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestArgs lays out arguments by name and refuses a call that misses one,
// repeats one or names one the script does not take.
func TestArgs(t *testing.T) {
	if got := Args("touch", "attempt", "3", "member", "m1", "topic", "t"); !slices.Equal(got, []string{"m1", "t", "3"}) {
		t.Errorf("touch: %q", got)
	}
	if got := Args("schedule advance", "next", "9", "name", "n", "due", "5"); !slices.Equal(got, []string{"advance", "n", "5", "9"}) {
		t.Errorf("schedule advance: %q", got)
	}
	if got := Args("dead_retry", "n", "2", "set", "dead", "topic", "t"); !slices.Equal(got, []string{"t", "dead", "2"}) {
		t.Errorf("dead_retry: %q", got)
	}
	for _, bad := range [][]string{
		{"touch", "member", "m1", "topic", "t"},
		{"touch", "member", "m1", "member", "m2", "attempt", "2"},
		{"touch", "member", "m1", "topic", "t", "colour", "red"},
		{"nothing"},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Args(%q) did not panic", bad)
				}
			}()
			Args(bad[0], bad[1:]...)
		}()
	}
}

// pushRecordCode is lib_jobs.lua's OP_ARGS.push.record, without comments.
func pushRecordCode(t *testing.T) string {
	t.Helper()
	code := codeOf(read("lib_jobs.lua"))
	start := strings.Index(code, "function OP_ARGS.push.record(")
	end := strings.Index(code[max(start, 0):], "\nend\n")
	if start < 0 || end < 0 {
		t.Fatal("lib_jobs.lua defines no OP_ARGS.push.record")
	}
	return code[start : start+end+len("\nend\n")]
}

// TestPushRecordReadsPushArgs: the record builder every push path shares
// reads only a push's arguments (Ops), and only those every path has: the
// plain push's row (push_plain, less PushGeneral's) names each, so a field
// it sets reaches the record on all three paths.
func TestPushRecordReadsPushArgs(t *testing.T) {
	reads := regexp.MustCompile(`\bP\.(\w+)`).FindAllStringSubmatch(pushRecordCode(t), -1)
	if len(reads) == 0 {
		t.Fatal("OP_ARGS.push.record reads no P.<name>")
	}
	for _, m := range reads {
		if !slices.Contains(Ops["push"], m[1]) {
			t.Errorf("OP_ARGS.push.record reads %q, which Ops[\"push\"] does not name", m[1])
		}
		if !slices.Contains(ScriptArgs["push_plain"], m[1]) {
			t.Errorf("OP_ARGS.push.record reads %q, which the plain push does not carry (PushGeneral, pushKeyArgs)", m[1])
		}
	}
	if want := []string{"topic", "member", "priority", "ttr", "delay", "body", "client_id", "retry", "trace",
		"json", "keep", "timeout"}; !slices.Equal(ScriptArgs["push_plain"][:len(want)], want) {
		t.Errorf("push_plain's row %q does not start %q", ScriptArgs["push_plain"], want)
	}
}

// TestShortPathChecksPushGeneral: lib_lean.lua's short path takes a push
// only when it uses none of PushGeneral's arguments (each at its unused
// value), as pool/plain.go's plainPush does.
func TestShortPathChecksPushGeneral(t *testing.T) {
	checked := map[string]string{}
	for _, m := range regexp.MustCompile(`ARGV\[at \+ AT_PUSH\.(\w+)\] ~= '([^']*)'`).FindAllStringSubmatch(codeOf(read("lib_lean.lua")), -1) {
		checked[m[1]] = m[2]
	}
	if !maps.Equal(checked, PushGeneral) {
		t.Errorf("lib_lean.lua checks a push's %v, PushGeneral is %v", checked, PushGeneral)
	}
}
