package gmqbench_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/gmqbench"
)

// bench runs `gmq bench` with args and returns its exit code, stdout and stderr.
func bench(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := gmqbench.Main(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// A line gmq bench does not fully understand measures nothing: exit 2 and
// the reason.
func TestMainRefusesBadLines(t *testing.T) {
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"--clients", "2", "stray"}, `unexpected argument "stray"; nothing after it was read`},
		{[]string{"--bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"--jobs", "many"}, `invalid value "many" for flag -jobs`},
		{[]string{"--delay-rate", "100"}, "needs --http"},
		{[]string{"--cpu", "redis"}, `--cpu: want name=pid, got "redis"`},
		{[]string{"--cpu", "redis=0"}, `got "redis=0"`},
		{[]string{"--cpu", "gmq=12,=3"}, `got "=3"`},
	} {
		code, out, stderr := bench(tc.args...)
		if code != 2 || out != "" || !strings.Contains(stderr, tc.says) || !strings.Contains(stderr, "gmq bench -h") {
			t.Errorf("gmq bench %q: exit %d %q %q, want 2 saying %q", tc.args, code, out, stderr, tc.says)
		}
	}
}

// gmq bench measures the brokers its flags name and reports as asked.
func TestMainMeasures(t *testing.T) {
	b := brokertest.Fresh(t, nil)
	for _, tc := range []struct {
		args []string
		says []string
	}{
		{[]string{"--http", b.URL, "--batch", "5"}, []string{"http " + b.URL, "pop+ack", "cycle"}},
		{[]string{"--beanstalk", b.BeanstalkAddr + "," + b.BeanstalkAddr, "--vs", b.BeanstalkAddr}, []string{"beanstalk " + b.BeanstalkAddr + " +1", "first/this", "x\n"}},
		{[]string{"--kestrel", b.KestrelAddr, "--reliable"}, []string{"kestrel " + b.KestrelAddr + " (open/close)"}},
		{[]string{"--kestrel", b.KestrelAddr + "," + b.KestrelAddr}, []string{"kestrel " + b.KestrelAddr + " +1"}},
		{[]string{"--thrift", b.ThriftAddr, "--vs", b.BeanstalkAddr}, []string{"thrift " + b.ThriftAddr, "beanstalk " + b.BeanstalkAddr}},
		{[]string{"--thrift", b.ThriftAddr + "," + b.ThriftAddr, "--reliable"}, []string{"thrift " + b.ThriftAddr + " +1 (auto-abort/confirm)"}},
		{[]string{"--http", b.URL, "--json"}, []string{`"jobs_per_second"`}},
	} {
		code, out, stderr := bench(append(tc.args, "--clients", "2", "--jobs", "40")...)
		if code != 0 {
			t.Errorf("gmq bench %q: exit %d %s", tc.args, code, stderr)
		}
		for _, want := range tc.says {
			if !strings.Contains(out, want) {
				t.Errorf("gmq bench %q: the report lacks %q:\n%s", tc.args, want, out)
			}
		}
	}
	code, out, stderr := bench("--http", b.URL, "--delay-rate", "50", "--delay-for", "300ms", "--delay-max", "1s", "--json")
	var r map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil {
		t.Fatalf("gmq bench's delay mode: exit %d %s %s", code, out, stderr)
	}
	code, _, stderr = bench("--beanstalk", "127.0.0.1:1", "--clients", "1", "--jobs", "1")
	if code != 1 || !strings.Contains(stderr, "gmq bench: beanstalk 127.0.0.1:1") {
		t.Fatalf("gmq bench against nothing: exit %d %s", code, stderr)
	}
}

// gmq bench says how far it is while it runs (issue 49: it printed nothing
// until it ended): off a terminal, a line as each mode starts, one every few
// seconds, and one as it ends, on stderr. And it deletes its bench-* topics
// when done (on the dashboard they sorted first), through --api where the
// target is not the HTTP API; --keep-topics leaves them.
func TestMainShowsProgressAndDropsItsTopics(t *testing.T) {
	b := brokertest.Fresh(t, nil)
	benchTopics := func() []string {
		var names []string
		for _, topic := range brokertest.MustCall(t, 200, "GET", b.URL+"/api/v1/topics", "")["topics"].([]any) {
			if name := topic.(map[string]any)["name"].(string); strings.HasPrefix(name, "bench-") {
				names = append(names, name)
			}
		}
		return names
	}
	for _, tc := range []struct {
		args  []string
		lines []string
	}{
		{[]string{"--http", b.URL}, []string{"push     http " + b.URL + ": 40 jobs…", "push     http " + b.URL + ": 40/40 jobs in ",
			"pop+ack  http " + b.URL + ": 40/40 jobs in ", "cycle    http " + b.URL + ": 40/40 jobs in "}},
		{[]string{"--beanstalk", b.BeanstalkAddr, "--api", b.URL, "--topics", "2"}, []string{"cycle    beanstalk " + b.BeanstalkAddr + ": 40/40 jobs in "}},
		{[]string{"--http", b.URL, "--delay-rate", "50", "--delay-for", "300ms", "--delay-max", "1s"},
			[]string{"delay    http " + b.URL + ": 15 jobs…", "delay    http " + b.URL + ": "}}, // then N/N jobs in S s
	} {
		code, _, stderr := bench(append(tc.args, "--clients", "2", "--jobs", "40")...)
		if code != 0 {
			t.Fatalf("gmq bench %q: exit %d %s", tc.args, code, stderr)
		}
		for _, line := range tc.lines {
			if !strings.Contains(stderr, "gmq bench: "+line) {
				t.Errorf("gmq bench %q: stderr lacks %q:\n%s", tc.args, line, stderr)
			}
		}
		if strings.Contains(stderr, "\r") {
			t.Errorf("gmq bench %q drew a bar off a terminal:\n%q", tc.args, stderr)
		}
		if left := benchTopics(); len(left) > 0 {
			t.Errorf("gmq bench %q left its topics: %v", tc.args, left)
		}
	}
	if code, _, stderr := bench("--http", b.URL, "--clients", "2", "--jobs", "4", "--keep-topics"); code != 0 || len(benchTopics()) != 1 {
		t.Errorf("gmq bench --keep-topics: exit %d, topics %v\n%s", code, benchTopics(), stderr)
	}
}
