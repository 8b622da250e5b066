package admin_test

import (
	"bytes"
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gmq/gmq/admin"
	"github.com/gmq/gmq/broker/brokertest"
)

// run runs an admin command with exactly args (no --url added).
func run(name string, args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := admin.Run(name, args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// view reads gmq stats' output: section title → label → value.
func view(t *testing.T, out string) map[string]map[string]string {
	t.Helper()
	row := regexp.MustCompile(`^  (\S.*?)  +(\S.*)$`)
	sections := map[string]map[string]string{}
	var title string
	for line := range strings.Lines(strings.TrimRight(out, "\n")) {
		line = strings.TrimSuffix(line, "\n")
		if !strings.HasPrefix(line, " ") {
			title = line
			sections[title] = map[string]string{}
			continue
		}
		m := row.FindStringSubmatch(line)
		if m == nil || title == "" {
			t.Fatalf("gmq stats: line %q is neither a title nor a row:\n%s", line, out)
		}
		sections[title][m[1]] = m[2]
	}
	return sections
}

// gmq stats groups the broker's answer for people; --json is the API's.
func TestAdminStats(t *testing.T) {
	b := brokertest.Fresh(t, nil)
	for _, job := range []string{`{"topic":"s","body":"r1"}`, `{"topic":"s","body":"r2"}`, `{"topic":"s","body":"d","delay":60}`,
		`{"topic":"s","body":"x","priority":0}`, `{"topic":"s","body":"y","priority":0}`} {
		brokertest.MustCall(t, 201, "POST", b.URL+"/api/v1/jobs", job)
	}
	id := brokertest.MustCall(t, 200, "GET", b.URL+"/api/v1/pop?topic=s", "")["id"].(string)
	brokertest.MustCall(t, 200, "GET", b.URL+"/api/v1/pop?topic=s", "")
	brokertest.MustCall(t, 200, "POST", b.URL+"/api/v1/jobs/"+id+"/bury", `{}`)

	code, out, stderr := gmq(b, "stats")
	if code != 0 {
		t.Fatalf("gmq stats: %d %s", code, stderr)
	}
	got := view(t, out)
	for _, tc := range []struct {
		section, label string
		want           string // a regular expression the whole value matches
	}{
		{"server", "version", "test"},
		{"server", "status", "up"},
		{"server", "uptime", `\d+s|\d+m\d+s`},
		{"server", "topics", "1"},
		{"server", "buckets", "4"},
		{"jobs by state", "ready", "2"},
		{"jobs by state", "delayed", "1"},
		{"jobs by state", "reserved", "1"},
		{"jobs by state", "buried", "1"},
		{"jobs by state", "dead", "0"},
		{"jobs by state", "follow-ups waiting", "0"},
		{"totals", "pushed", "5"},
		{"totals", "reserved", "2"},
		{"totals", "buried", "1"},
		{"totals", "topics created", "1"},
		{"consumers and connections (this broker)", "consumers in a long poll", "0"},
		{"consumers and connections (this broker)", "beanstalk connections", `\d+`},
		{"consumers and connections (this broker)", "kestrel connections", `\d+`},
		{"consumers and connections (this broker)", "batched operations", `\d+ in \d+ script calls \(\d+\.\d a call\)`},
		{"consumers and connections (this broker)", "Redis lost gmq's data", "never"},
		{"redis", "version", `\d+\.\d+\.\d+`},
		{"redis", "memory used", `\d+\.\d (KiB|MiB|GiB)`},
		{"redis", "round trip", `\d+\.\d\d ms`},
	} {
		v, ok := got[tc.section][tc.label]
		if !ok || !regexp.MustCompile(`^(`+tc.want+`)$`).MatchString(v) {
			t.Errorf("gmq stats: %s / %s = %q, want %s\n%s", tc.section, tc.label, v, tc.want, out)
		}
	}
	// Every key this broker answers has its place: none left to "other".
	if other, ok := got["other"]; ok {
		t.Errorf("gmq stats does not place these keys of the API's answer: %v", other)
	}

	code, out, _ = gmq(b, "stats", "--json")
	var fromCLI map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &fromCLI) != nil {
		t.Fatalf("gmq stats --json: %d %s", code, out)
	}
	fromAPI := brokertest.MustCall(t, 200, "GET", b.URL+"/api/v1/stats", "")
	if a, c := slices.Sorted(maps.Keys(fromAPI)), slices.Sorted(maps.Keys(fromCLI)); !slices.Equal(a, c) || fromCLI["current_jobs_ready"] != 2.0 {
		t.Errorf("gmq stats --json is not the API's answer: keys %v, want %v", c, a)
	}
}

// --url and GMQ_URL take a URL without a scheme as http://; what is not a
// broker's URL is a usage error before anything is sent.
func TestAdminURLWithoutScheme(t *testing.T) {
	b := brokertest.Fresh(t, nil)
	port := b.HTTPAddr[strings.LastIndex(b.HTTPAddr, ":"):]
	for _, tc := range []struct {
		flag, env string
		code      int
		says      string
	}{
		{flag: b.HTTPAddr, says: "up"},
		{flag: "localhost" + port, says: "up"},
		{flag: "http://" + b.HTTPAddr + "/", says: "up"},
		{flag: "HTTP://" + b.HTTPAddr, says: "up"},
		{env: b.HTTPAddr, says: "up"},
		{env: "localhost" + port, says: "up"},
		{env: "ftp://x" + port, flag: b.HTTPAddr, says: "up"}, // --url wins over GMQ_URL
		{flag: "ftp://" + b.HTTPAddr, code: admin.ExitUsage, says: "want http://HOST:PORT"},
		{env: "http://", code: admin.ExitUsage, says: `--url (or GMQ_URL) "http://"`},
		{flag: "127.0.0.1:1", code: admin.ExitError, says: "the broker at http://127.0.0.1:1"},
	} {
		t.Setenv("GMQ_URL", tc.env)
		args := []string{}
		if tc.flag != "" {
			args = append(args, "--url", tc.flag)
		}
		code, out, stderr := run("status", args...)
		if code != tc.code || !strings.Contains(out+stderr, tc.says) {
			t.Errorf("gmq status --url %q (GMQ_URL %q): exit %d %q %q, want %d saying %q", tc.flag, tc.env, code, out, stderr, tc.code, tc.says)
		}
	}
}

// Flags may come anywhere on the line, and after -- every word is an
// argument.
func TestAdminFlagsAnywhere(t *testing.T) {
	b := brokertest.Fresh(t, nil)
	for _, tc := range []struct {
		args     []string
		body     string
		priority float64
	}{
		{[]string{"--json", "--priority", "5", "t", "b1"}, "b1", 5},
		{[]string{"t", "--priority=6", "b2", "--json"}, "b2", 6},
		{[]string{"--url", b.URL, "t", "--json", "b3", "--priority", "7"}, "b3", 7},
		{[]string{"--json", "t", "--", "-b4"}, "-b4", 1024},
		{[]string{"--json", "--", "t", "--priority"}, "--priority", 1024},
	} {
		var out, errOut bytes.Buffer
		args := append([]string{"--url", b.URL}, tc.args...)
		if code := admin.Run("push", args, &out, &errOut); code != 0 {
			t.Errorf("gmq push %q: exit %d %s", tc.args, code, errOut.String())
			continue
		}
		var answer map[string]any
		if err := json.Unmarshal(out.Bytes(), &answer); err != nil {
			t.Errorf("gmq push %q: %v %s", tc.args, err, out.String())
			continue
		}
		job := brokertest.MustCall(t, 200, "GET", b.URL+"/api/v1/jobs/"+answer["id"].(string), "")
		if job["body"] != tc.body || job["priority"] != tc.priority || job["topic"] != "t" {
			t.Errorf("gmq push %q: pushed %v %v to %v, want %q %v", tc.args, job["body"], job["priority"], job["topic"], tc.body, tc.priority)
		}
	}
}

// -h or --help anywhere prints the command's usage and flags on stdout,
// exit 0, and sends nothing.
func TestAdminHelp(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		says []string
	}{
		{"push", []string{"--help"}, []string{"usage: gmq push TOPIC BODY [--delay S] [--group G] [--priority N] [--ttr S] [--unique KEY] [--unique-for S] [--unique-mode M] [--url URL] [--token T] [--json]", "--ttr S ", "default_ttr"}},
		{"push", []string{"t", "b", "-h"}, []string{"usage: gmq push"}},
		{"pop", []string{"-help", "t"}, []string{"--timeout S "}},
		{"ack", []string{"-h"}, []string{"usage: gmq ack ID [--attempt N]", "409"}},
		{"release", []string{"--help"}, []string{"--delay S ", "--priority N ", "--attempt N ", "keeps its own"}},
		{"bury", []string{"--help"}, []string{"--priority N ", "--attempt N "}},
		{"touch", []string{"--help"}, []string{"--attempt N "}},
		{"stats", []string{"--url", "http://127.0.0.1:1", "--help"}, []string{"usage: gmq stats [--url URL] [--token T] [--json]", "GMQ_URL", "GMQ_TOKEN"}},
	} {
		code, out, stderr := run(tc.name, tc.args...)
		if code != 0 || stderr != "" {
			t.Errorf("gmq %s %q: exit %d %q", tc.name, tc.args, code, stderr)
		}
		for _, want := range tc.says {
			if !strings.Contains(out, want) {
				t.Errorf("gmq %s %q lacks %q:\n%s", tc.name, tc.args, want, out)
			}
		}
	}
}
