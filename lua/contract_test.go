package lua

import (
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gmq/gmq/job"
)

// contract.lua is what ContractLua renders from contract.go: a change to
// the tables that was not generated fails here (and so in make test).
func TestContractIsGenerated(t *testing.T) {
	got, err := files.ReadFile(ContractFile)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != ContractLua() {
		t.Fatalf("%s is stale: run go generate ./lua", ContractFile)
	}
}

// Every field has a name of its own and a doc.
func TestContractFields(t *testing.T) {
	seen := map[string]bool{}
	for f := FieldState; f < fieldEnd; f++ {
		s := fields[f]
		if !strings.HasPrefix(s.lua, "F_") || seen[s.lua] || s.doc == "" {
			t.Errorf("field %d: Lua name %q (unique, F_...) and a doc wanted", f, s.lua)
		}
		seen[s.lua] = true
	}
	if FieldCount != len(Fields())+1 {
		t.Errorf("FieldCount %d, %d fields", FieldCount, len(Fields()))
	}
}

// The scripts' states are package job's, each stored one kept in a topic
// key of that name (WAITING's is "after": "waiting" was taken by the key
// of consumers waiting); EXPIRED is the scripts' own.
func TestContractStates(t *testing.T) {
	var stored []job.State
	for _, s := range States {
		if s.State == StateExpired {
			if s.Set != "" {
				t.Errorf("EXPIRED has a set %q: its jobs are in the outbox", s.Set)
			}
			continue
		}
		stored = append(stored, s.State)
		set := s.State.String()
		if s.State == job.Waiting {
			set = "after"
		}
		if s.Lua != strings.ToUpper(s.State.String()) || s.Set != set || SlotIndex(TopicKeys, s.Set) < 0 {
			t.Errorf("state %d: Lua %q, set %q: want job's name, and a topic key of that name", s.State, s.Lua, s.Set)
		}
	}
	if !slices.Equal(stored, job.Stored) {
		t.Errorf("the scripts' stored states %v, job's %v", stored, job.Stored)
	}
	if _, ok := job.ParseState(StateExpired.String()); ok {
		t.Errorf("StateExpired %d is one of job's states", StateExpired)
	}
}

// The scripts name the record's fields and their keys: no topic-scoped
// script reads KEYS or a record by position, or defines a contract name.
func TestScriptsUseNames(t *testing.T) {
	positional := regexp.MustCompile(`KEYS\[|\bjob\[\d|\brecord\[\d|\.a\[\d`)
	defined := regexp.MustCompile(`local (F_[A-Z_]+|K_[A-Z_]+|DELAYED|READY|RESERVED|BURIED|DEAD|EXPIRED)\b`)
	names, err := fs.Glob(files, "*.lua")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		script := strings.TrimSuffix(name, ".lua")
		if standalone[script] && !strings.HasPrefix(script, "lib") {
			continue
		}
		body, _ := files.ReadFile(name)
		for i, line := range strings.Split(string(body), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "--") {
				continue
			}
			if m := positional.FindString(line); m != "" || defined.MatchString(line) {
				t.Errorf("%s:%d: %q: name it through the contract (lua/contract.go)", name, i+1, strings.TrimSpace(line))
			}
		}
	}
}

// OpArgs puts each argument where OP_ARGS names it, and refuses a call
// that misses, repeats or invents one.
func TestOpArgs(t *testing.T) {
	got := OpArgs("delete", "mode", "unreserved", "result", "", "member", "m1", "attempt", "2")
	if !slices.Equal(got, []string{"m1", "2", "unreserved", ""}) {
		t.Fatalf("delete's arguments %q", got)
	}
	for _, bad := range [][]string{
		{"member", "m1", "attempt", "2", "mode", ""},
		{"member", "m1", "member", "m2", "attempt", "2", "mode", ""},
		{"member", "m1", "attempt", "2", "mode", "", "colour", "red"},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("OpArgs(delete, %q) did not panic", bad)
				}
			}()
			OpArgs("delete", bad...)
		}()
	}
	for kind, names := range Ops {
		if !strings.Contains(ContractLua(), kind+" = {'"+strings.Join(names, "', '")+"'}") {
			t.Errorf("OP_ARGS does not name %s's arguments %q", kind, names)
		}
	}
}

// Every field of a topic's stats has a name, and topic_stats.lua sets each.
func TestContractTopicStats(t *testing.T) {
	script, err := files.ReadFile("topic_stats.lua")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for f, st := range topicStats {
		name := st[0]
		if !strings.HasPrefix(name, "S_") || seen[name] || st[1] == "" {
			t.Errorf("topic stat %d: name %q (unique, S_...) and a doc wanted", f, name)
		}
		seen[name] = true
		field := regexp.QuoteMeta("S." + strings.TrimPrefix(name, "S_"))
		if !regexp.MustCompile(`out\[` + field + `\]|, ` + field + `\}`).Match(script) {
			t.Errorf("topic_stats.lua does not set %s", name)
		}
	}
}

// BenchmarkOpArgs is a push's arguments laid out by name, as the pool does
// for every push.
func BenchmarkOpArgs(b *testing.B) {
	for b.Loop() {
		OpArgs("push", "member", "0000000000000042", "priority", "1024", "ttr", "60000", "delay", "0",
			"body", "hello", "client_id", "", "expires", "0", "retry", "", "trace", "")
	}
}

// A field whose unset value is "not in the record" (absent) is among the
// last: new_record leaves it out, and a Lua array has no holes.
func TestAbsentFieldsAreLast(t *testing.T) {
	seen := false
	for f := FieldState; f < fieldEnd; f++ {
		if fields[f].absent {
			seen = true
		} else if seen {
			t.Errorf("%s follows an absent field", fields[f].lua)
		}
	}
}
