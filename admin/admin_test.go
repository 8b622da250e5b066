package admin_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/gmq/gmq/admin"
	"github.com/gmq/gmq/broker/brokertest"
)

func TestMain(m *testing.M) { brokertest.Main(m) }

// gmq runs an admin command against b and returns its exit code, stdout and stderr.
func gmq(b *brokertest.Broker, name string, args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := admin.Run(name, append(args, "--url", b.URL), &out, &errOut)
	return code, out.String(), errOut.String()
}

// Values the API would refuse, or that a flag's "left out" default hid
// (issue 20: --ttr NaN, --ttr -5 and --priority -5 pushed with the
// defaults; pop --timeout 1e10 failed at once with a deadline error), are
// usage errors, and nothing is sent.
func TestAdminRefusesBadValues(t *testing.T) {
	b := brokertest.Fresh(t, nil)
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"push", "t", "x", "--ttr", "NaN"}, "--ttr NaN: want seconds from 0 to 4294967295"},
		{[]string{"push", "t", "x", "--ttr", "-5"}, "--ttr -5"},
		{[]string{"push", "t", "x", "--ttr", "-1"}, "--ttr -1"},
		{[]string{"push", "t", "x", "--ttr", "+Inf"}, "--ttr +Inf"},
		{[]string{"push", "t", "x", "--ttr", "4294967296"}, "--ttr 4.294967296e+09"},
		{[]string{"push", "t", "x", "--delay", "-1"}, "--delay -1"},
		{[]string{"push", "t", "x", "--delay", "nan"}, "--delay NaN"},
		{[]string{"push", "t", "x", "--priority", "-5"}, "--priority -5: want a whole number from 0 to 4294967295"},
		{[]string{"push", "t", "x", "--priority", "-1"}, "--priority -1"},
		{[]string{"push", "t", "x", "--priority", "4294967296"}, "--priority 4294967296"},
		{[]string{"pop", "t", "--timeout", "1e10"}, "--timeout 1e+10: want seconds from 0 to 4294967295"},
		{[]string{"pop", "t", "--timeout", "-1"}, "--timeout -1"},
		{[]string{"pop", "t", "--timeout", "NaN"}, "--timeout NaN"},
		{[]string{"push", "t", "x", "--unique", "k", "--unique-for", "NaN"}, "--unique-for NaN: want seconds"},
		{[]string{"push", "t", "x", "--unique", "k", "--unique-for", "-1"}, "--unique-for -1"},
		{[]string{"pause", "t", "NaN"}, `SECONDS "NaN"`},
		{[]string{"pause", "t", "1e300"}, `SECONDS "1e300"`},
		{[]string{"ack", "1", "--attempt", "-1"}, "--attempt -1: want a whole number from 0 to 2147483647"},
		{[]string{"ack", "1", "--attempt", "2147483648"}, "--attempt 2147483648"},
		{[]string{"ack", "1", "--attempt", "1.5"}, `invalid value "1.5" for flag -attempt`},
		{[]string{"ack", "1", "--delay", "5"}, "flag provided but not defined: -delay"}, // the API would refuse it too
		{[]string{"ack"}, "0 argument(s), want ID"},
		{[]string{"ack", "1", "2"}, `unexpected argument "2"`},
		{[]string{"release", "1", "--delay", "-1"}, "--delay -1"},
		{[]string{"release", "1", "--delay", "NaN"}, "--delay NaN"},
		{[]string{"release", "1", "--priority", "4294967296"}, "--priority 4294967296"},
		{[]string{"release", "1", "--attempt", "-3"}, "--attempt -3"},
		{[]string{"bury", "1", "--priority", "-1"}, "--priority -1"},
		{[]string{"bury", "1", "--delay", "5"}, "flag provided but not defined: -delay"},
		{[]string{"touch", "1", "--attempt", "-1"}, "--attempt -1"},
		{[]string{"touch", "1", "--priority", "5"}, "flag provided but not defined: -priority"},
		{[]string{"stats", "extra"}, `unexpected argument "extra"`},
	} {
		code, _, stderr := gmq(b, tc.args[0], tc.args[1:]...)
		if code != admin.ExitUsage || !strings.Contains(stderr, tc.says) || !strings.Contains(stderr, "usage: gmq "+tc.args[0]) {
			t.Errorf("gmq %v: exit %d %q, want %d saying %q", tc.args, code, stderr, admin.ExitUsage, tc.says)
		}
	}
	code, out, _ := gmq(b, "stats", "--json")
	var stats map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &stats) != nil || stats["total_jobs"] != 0.0 {
		t.Fatalf("refused commands reached the broker: %d %s", code, out)
	}
	// The edges themselves are taken.
	if code, out, stderr := gmq(b, "push", "t", "x", "--ttr", "0", "--priority", "4294967295", "--delay", "4294967295", "--json"); code != 0 {
		t.Fatalf("push at the edges: %d %s %s", code, out, stderr)
	}
	if code, out, stderr := gmq(b, "pop", "empty", "--timeout", "0.2"); code != 0 || !strings.Contains(out, "(no job)") {
		t.Fatalf("pop: %d %s %s", code, out, stderr)
	}
}

// gmq topics lists every topic, page after page, not only the API's first
// page of 1,000 (issue 20).
func TestAdminTopicsPagesThroughAll(t *testing.T) {
	b := brokertest.Fresh(t, nil)
	const n = 2345
	for start := 0; start < n; start += 1000 {
		var jobs []string
		for i := start; i < min(start+1000, n); i++ {
			jobs = append(jobs, fmt.Sprintf(`{"topic":"p%04d","body":"x"}`, i))
		}
		brokertest.MustCall(t, 201, "POST", b.URL+"/api/v1/jobs/batch", `{"jobs":[`+strings.Join(jobs, ",")+`]}`)
	}
	code, out, stderr := gmq(b, "topics")
	if code != 0 {
		t.Fatalf("gmq topics: %d %s", code, stderr)
	}
	for _, name := range []string{"p0000", "p0999", "p1000", "p2344"} {
		if !strings.Contains(out, name+" ") {
			t.Errorf("gmq topics leaves out %s", name)
		}
	}
	if lines := strings.Count(out, "\n"); lines != n+1 {
		t.Errorf("gmq topics: %d lines, want a header and %d topics", lines, n)
	}
	code, out, _ = gmq(b, "topics", "--json")
	var answer struct {
		Total  int   `json:"total"`
		Topics []any `json:"topics"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &answer) != nil || answer.Total != n || len(answer.Topics) != n {
		t.Fatalf("gmq topics --json: %d, total %d, %d topics; want %d", code, answer.Total, len(answer.Topics), n)
	}
}

// gmq push --unique: a new job prints its id, a held key exits non-zero
// naming the job that holds it, a replace prints that job's id and what it
// did; --unique alone is a usage error.
func TestAdminPushUnique(t *testing.T) {
	b := brokertest.Fresh(t, nil)
	code, first, stderr := gmq(b, "push", "mail", "hi", "--unique", "user-42", "--unique-for", "600")
	if code != 0 {
		t.Fatalf("first push: %d %s %s", code, first, stderr)
	}
	id := strings.TrimSpace(first)
	if code, out, stderr := gmq(b, "push", "mail", "again", "--unique", "user-42", "--unique-for", "600"); code != admin.ExitError || !strings.Contains(stderr, "held by job "+id) {
		t.Fatalf("a held key: %d %s %s", code, out, stderr)
	}
	if code, out, stderr := gmq(b, "push", "mail", "new", "--unique", "user-42", "--unique-for", "600", "--unique-mode", "replace"); code != 0 || strings.TrimSpace(out) != id+" (replaced)" {
		t.Fatalf("replace: %d %q %s", code, out, stderr)
	}
	if code, _, stderr := gmq(b, "push", "mail", "x", "--unique", "k"); code != 2 || !strings.Contains(stderr, "--unique-for") {
		t.Fatalf("--unique alone: %d %s", code, stderr)
	}
}

// gmq push --group: the job carries its group.
func TestAdminPushGroup(t *testing.T) {
	b := brokertest.Fresh(t, nil)
	code, out, stderr := gmq(b, "push", "exports", "report", "--group", "tenant-42", "--json")
	if code != 0 {
		t.Fatalf("push: %d %s %s", code, out, stderr)
	}
	var pushed map[string]any
	if err := json.Unmarshal([]byte(out), &pushed); err != nil {
		t.Fatal(err)
	}
	j := brokertest.MustCall(t, 200, "GET", b.URL+"/api/v1/jobs/"+fmt.Sprint(pushed["id"]), "")
	if j["group"] != "tenant-42" {
		t.Fatalf("the job: %v", j)
	}
}

// gmq schedules lists each schedule on a line of its own.
func TestAdminSchedules(t *testing.T) {
	b := brokertest.Fresh(t, nil)
	brokertest.MustCall(t, 200, "PUT", b.URL+"/api/v1/schedules/nightly", `{"cron":"0 3 * * *","tz":"Europe/Berlin","job":{"topic":"reports","body":"x"}}`)
	code, out, stderr := gmq(b, "schedules")
	if code != 0 || !strings.Contains(out, "SCHEDULE") || !strings.Contains(out, "nightly") || !strings.Contains(out, "0 3 * * *") ||
		!strings.Contains(out, "Europe/Berlin") || !strings.Contains(out, "reports") {
		t.Fatalf("gmq schedules: %d %q %s", code, out, stderr)
	}
	// One schedule; pause, resume and fire it from the command line.
	for _, tc := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"schedule", "nightly", "--json"}, 0, `"paused": false`},
		{[]string{"schedule", "nightly", "pause", "--json"}, 0, `"paused": true`},
		{[]string{"schedule", "nightly", "resume", "--json"}, 0, `"paused": false`},
		{[]string{"schedule", "nightly", "fire", "--json"}, 0, `"id"`},
		{[]string{"schedule", "nightly", "stop"}, 2, `"stop": want pause, resume or fire`},
		{[]string{"schedule", "nobody"}, 1, "404"},
	} {
		if code, out, stderr := gmq(b, tc.args[0], tc.args[1:]...); code != tc.code || !strings.Contains(out+stderr, tc.says) {
			t.Errorf("gmq %v: %d %q %q, want %d with %q", tc.args, code, out, stderr, tc.code, tc.says)
		}
	}
	if st := brokertest.MustCall(t, 200, "GET", b.URL+"/api/v1/topics/reports", ``); st["ready"] != 1.0 {
		t.Errorf("after gmq schedule nightly fire: %v, want its job ready", st)
	}
}

// gmq batch shows a batch, closes an open one and cancels one.
func TestAdminBatch(t *testing.T) {
	b := brokertest.Fresh(t, nil)
	id := fmt.Sprint(brokertest.MustCall(t, 201, "POST", b.URL+"/api/v1/batches", `{"open":true,"jobs":[{"topic":"cli-b","body":"x","delay":3600}]}`)["id"])
	for _, tc := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"batch", id}, 0, "open"},
		{[]string{"batch", id, "--json"}, 0, `"total": 1`},
		{[]string{"batch", id, "close", "--json"}, 0, `"state": "closed"`},
		{[]string{"batch", id, "cancel", "--json"}, 0, `"cancelled": 1`},
		{[]string{"batch", id, "stop"}, 2, `"stop": want close or cancel`},
		{[]string{"batch", "12345"}, 1, "404"},
	} {
		if code, out, stderr := gmq(b, tc.args[0], tc.args[1:]...); code != tc.code || !strings.Contains(out+stderr, tc.says) {
			t.Errorf("gmq %v: %d %q %q, want %d with %q", tc.args, code, out, stderr, tc.code, tc.says)
		}
	}
}
