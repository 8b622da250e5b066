package admin

import (
	"bytes"
	"errors"
	"flag"
	"slices"
	"strings"
	"testing"
)

func TestHumanDuration(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want string
	}{
		{0.0, "0s"},
		{1.94, "2s"},
		{59.4, "59s"},
		{60.0, "1m0s"},
		{725.0, "12m5s"},
		{3*3600 + 12*60 + 59.0, "3h12m"},
		{86399.0, "23h59m"},
		{86400.0, "1d0h"},
		{4*86400 + 3*3600 + 7.0, "4d3h"},
		{nil, "-"},       // an older broker's answer without it
		{"soon", "soon"}, // not a number: shown as it is
		{-1.0, "-1"},
	} {
		if got := humanDuration(tc.in); got != tc.want {
			t.Errorf("humanDuration(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestHumanBytes(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want string
	}{
		{0.0, "0 B"},
		{1023.0, "1023 B"},
		{1024.0, "1.0 KiB"},
		{1517616.0, "1.4 MiB"},
		{1.5 * (1 << 30), "1.5 GiB"},
		{3.0 * (1 << 50), "3.0 PiB"},
		{2.0 * (1 << 60), "2048.0 PiB"}, // the largest unit goes on
		{nil, "-"},
	} {
		if got := humanBytes(tc.in); got != tc.want {
			t.Errorf("humanBytes(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// The stats view places every key it knows, leaves out the ones an older
// broker lacks, and shows any it does not know under "other".
func TestStatsView(t *testing.T) {
	m := map[string]any{"version": "1.2", "uptime": 11520.0, "current_jobs_ready": 3.0, "total_jobs": 9.0,
		"connections": map[string]any{"rpc": 2.0, "beanstalk": 1.0}, "batched_operations": 10.0, "batch_script_calls": 4.0,
		"store_data_lost": 1.0, "store_data_lost_at": "2026-01-02T03:04:05Z", "something_new": 7.0}
	redis := map[string]any{"version": "7.2.4", "used_memory": 1258291.0, "rtt_ms": 0.25,
		"nodes": []any{map[string]any{"addr": "a:1", "role": "master", "used_memory": 2048.0, "rtt_ms": 0.5},
			map[string]any{"addr": "b:2", "role": "master", "used_memory": 0.0, "error": "down"}}}
	var out bytes.Buffer
	if err := writeSections(&out, statsView(m, redis, nil)); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"server\n", "  version   ", " 1.2\n", " 3h12m\n", "jobs by state\n", "  ready ", " 3\n",
		"  pushed ", " 9\n", "beanstalk connections", "rpc connections", "10 in 4 script calls (2.5 a call)",
		"once, last at 2026-01-02T03:04:05Z", "redis\n", "1.2 MiB", "0.25 ms", "node a:1 ", "master, 2.0 KiB, 0.50 ms",
		"master, 0 B, down", "other\n", "  something_new ", " 7\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the stats view lacks %q:\n%s", want, out.String())
		}
	}
	for _, absent := range []string{"delayed", "total_jobs", "discarded"} {
		if strings.Contains(out.String(), absent) {
			t.Errorf("the stats view shows %q, which the answer lacks or is placed under another name:\n%s", absent, out.String())
		}
	}
	out.Reset()
	if err := writeSections(&out, statsView(m, nil, errors.New("503: redis is down"))); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "unavailable") || !strings.Contains(out.String(), "503: redis is down") || !strings.Contains(out.String(), "pushed") {
		t.Errorf("without /redis the view should keep the counts and say why:\n%s", out.String())
	}
}

// Every command's help names every flag it takes, with what it means.
func TestHelpListsEveryFlag(t *testing.T) {
	for _, cmd := range commands {
		var out bytes.Buffer
		flags := newFlags(cmd, &call{given: map[string]bool{}})
		if err := help(&out, cmd, flags); err != nil {
			t.Fatal(err)
		}
		text := out.String()
		if !strings.HasPrefix(text, "usage: gmq "+cmd.name) {
			t.Errorf("help of %s begins %q", cmd.name, text)
		}
		n := 0
		flags.VisitAll(func(f *flag.Flag) {
			n++
			line := "--" + strings.TrimSpace(f.Name+" "+placeholders[f.Name])
			if !strings.Contains(text, "["+line+"]") || !strings.Contains(text, "  "+line+" ") || !strings.Contains(text, f.Usage) {
				t.Errorf("help of %s leaves out %s or what it means:\n%s", cmd.name, line, text)
			}
		})
		if n < len(sharedFlags) {
			t.Errorf("%s has %d flags", cmd.name, n)
		}
	}
}

func TestBaseURL(t *testing.T) {
	for _, tc := range []struct {
		in, want string // want "": a usage error
	}{
		{"http://127.0.0.1:8000", "http://127.0.0.1:8000"},
		{"http://127.0.0.1:8000/", "http://127.0.0.1:8000"},
		{"127.0.0.1:8000", "http://127.0.0.1:8000"},
		{"localhost:8000", "http://localhost:8000"},
		{"  localhost:8000 ", "http://localhost:8000"},
		{"https://gmq.example.com", "https://gmq.example.com"},
		{"HTTP://Example.com:80/gmq/", "http://Example.com:80/gmq"},
		{"gmq.example.com/behind/a/proxy", "http://gmq.example.com/behind/a/proxy"},
		{"ftp://x", ""},
		{"http://", ""},
		{"", ""},
		{"http://x:8000?a=b", ""},
		{"http://[::1", ""},
	} {
		got, err := baseURL(tc.in)
		var usage usageError
		if tc.want == "" {
			if !errors.As(err, &usage) || !strings.Contains(err.Error(), "want http://HOST:PORT") {
				t.Errorf("baseURL(%q) = %q, %v; want a usage error", tc.in, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("baseURL(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// Split moves the shared flags found before the command behind it.
func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		args, rest []string
		name       string
		err        string
	}{
		{args: []string{"stats"}, name: "stats", rest: []string{}},
		{args: []string{"--json", "stats"}, name: "stats", rest: []string{"--json"}},
		{args: []string{"--url", "http://x:8000", "topics", "--json"}, name: "topics", rest: []string{"--url", "http://x:8000", "--json"}},
		{args: []string{"--url=x:8000", "-token", "s3cret", "-json", "push", "t", "b"}, name: "push",
			rest: []string{"--url=x:8000", "-token", "s3cret", "-json", "t", "b"}},
		{args: []string{"--token=t", "--", "pop", "q"}, name: "pop", rest: []string{"--token=t", "q"}},
		{args: []string{"--json", "-h"}, name: "-h", rest: []string{"--json"}},
		{args: []string{"--version"}, name: "--version", rest: []string{}},
		{args: []string{"--http", "x", "start"}, name: "--http", rest: []string{"x", "start"}},
		{args: []string{}, name: "", rest: nil},
		{args: []string{"--json"}, name: "", rest: []string{"--json"}},
		{args: []string{"--url"}, err: "flag needs an argument: --url"},
	} {
		name, rest, err := Split(tc.args)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("Split(%q): %v, want %q", tc.args, err, tc.err)
			}
			continue
		}
		if err != nil || name != tc.name || !slices.Equal(rest, tc.rest) {
			t.Errorf("Split(%q) = %q, %q, %v; want %q, %q", tc.args, name, rest, err, tc.name, tc.rest)
		}
	}
}

// A body in a table: control characters and bytes that are not UTF-8 are
// escaped, so a body cannot move the cursor; quotes, backslashes and any
// script show as they are (a new user's trial: `say "hi"` showed as
// `say \"hi\"`, which is not what was pushed).
func TestEscapeControls(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`say "hi" ünï`, `say "hi" ünï`},
		{"a\tb\nc", `a\tb\nc`},
		{"\x1b[2J", `\x1b[2J`},
		{`back\slash`, `back\slash`},
		{"bad \xff byte", `bad \xff byte`},
		{`{"a":1}`, `{"a":1}`},
	} {
		if got := escapeControls(tc.in); got != tc.want {
			t.Errorf("escapeControls(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
