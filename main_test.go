package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gmq/gmq/internal/redistest"
	"github.com/gmq/gmq/systemtest/harness"
)

// The tests of main's own: the command line and what gmq prints, run as
// the built binary (harness.Binary) or in-process (gmq). The system tests
// of the running broker are in systemtest/.
func TestMain(m *testing.M) { harness.Main(m) }

func TestBadConfigNamesTheKey(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "conf.ini")
	if err := os.WriteFile(conf, []byte("[redis]\nbuckets = zero\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd := exec.Command(harness.Binary, "start", "-c", conf)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 1 {
		t.Fatalf("exit %v, want 1", err)
	}
	if !strings.Contains(out.String(), "[redis] buckets") {
		t.Fatalf("message %q does not name the key", out.String())
	}
}

func TestVersion(t *testing.T) {
	out, err := exec.Command(harness.Binary, "version").Output()
	if err != nil || !strings.HasPrefix(string(out), "gmq ") {
		t.Fatalf("%q %v", out, err)
	}
}

// A token with an unauthenticated port open beyond loopback would look like
// it guards the broker while it does not: the broker refuses to start, naming
// the way out.
func TestTokenWithOpenPortsRefused(t *testing.T) {
	out, err := exec.Command(harness.Binary, "start", "--token", "s3cret", "--beanstalk", "0.0.0.0:0", "--rpc", "").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "[beanstalk] addr = 0.0.0.0:0 listens beyond loopback") ||
		!strings.Contains(string(out), "allow_open_ports") {
		t.Fatalf("start with a token and an open beanstalkd port: %v\n%s", err, out)
	}
}

// gmq status reads and sets the server status through a broker's HTTP API,
// and fails with a message and exit code 1 for an unknown status.
func TestStatusCommand(t *testing.T) {
	srv := redistest.Start(t)
	b := harness.StartBroker(t, srv.URL())
	status := func(args ...string) (string, error) {
		out, err := exec.Command(harness.Binary, append([]string{"status", "--url", b.URL("")}, args...)...).CombinedOutput()
		return string(out), err
	}
	if out, err := status(); err != nil || out != "up\n" {
		t.Fatalf("gmq status: %q %v", out, err)
	}
	if out, err := status("readonly"); err != nil || out != "readonly\n" {
		t.Fatalf("gmq status readonly: %q %v", out, err)
	}
	if a, _ := b.Do("POST", "/api/v1/jobs", `{"topic":"t","body":"x"}`); a.Code != 503 {
		t.Fatalf("push while read-only: %d", a.Code)
	}
	out, err := status("sideways")
	if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 1 || !strings.Contains(out, "unknown status") {
		t.Fatalf("gmq status sideways: %q %v", out, err)
	}
	if out, err := status("up"); err != nil || out != "up\n" {
		t.Fatalf("gmq status up: %q %v", out, err)
	}
}

// The admin commands against a live broker: each a thin client of the HTTP
// API, tables for people, --json for scripts, exit codes 0 / 1 / 2.
func TestAdminCommands(t *testing.T) {
	t.Parallel() // correctness, not timing: it may share the cores with the others like it
	srv := redistest.Start(t)
	b := harness.StartBroker(t, srv.URL())
	gmq := func(args ...string) (string, int) {
		cmd := exec.Command(harness.Binary, args...)
		cmd.Env = append(os.Environ(), "GMQ_URL="+b.URL(""))
		out, err := cmd.CombinedOutput()
		code := 0
		if exit, ok := err.(*exec.ExitError); ok {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), code
	}
	must := func(want string, args ...string) string {
		t.Helper()
		out, code := gmq(args...)
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("gmq %v: exit %d\n%s\nwant %q in it", args, code, out, want)
		}
		return out
	}
	id := strings.TrimSpace(must("", "push", "mail", "hello\x1b[2J", "--priority", "5", "--ttr", "30"))
	must("", "push", "--delay", "60", "mail", "later")
	must("mail", "topics")
	must(`"ready": 1`, "topic", "mail", "--json") // --json: the API's JSON, key names intact
	must("ready", "topic", "mail")                // a table for people
	if out := must("hello", "peek", "mail"); strings.Contains(out, "\x1b") {
		t.Fatalf("a body's control characters reach the terminal:\n%q", out)
	}
	must("later", "peek", "mail", "delayed")
	must(`"priority": 5`, "job", id, "--json")
	must(`"state": "reserved"`, "pop", "mail", "--json", "--timeout", "1")
	must("state", "fail", id, "smtp 550")
	must("paused", "pause", "mail", "60")
	must("kicked", "kick", "mail")
	must("deleted", "delete", id)
	must("pushed", "stats")
	must(`"total_jobs"`, "stats", "--json")
	id = strings.TrimSpace(must("", "push", "work", "again")) // mail is paused
	must("attempt", "pop", "work")
	must("time_left", "touch", id, "--attempt", "1")
	must("ready", "release", id, "--priority", "3")
	must(`"acked"`, "--json", "ack", id)
	must("(no job)", "pop", "empty", "--timeout", "0.1")
	must("readonly", "status", "readonly")
	must("up", "status", "up")
	for _, tc := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"job", "nobody"}, 1, "404"},
		{[]string{"delete", "nobody"}, 1, "not found"},
		{[]string{"push", "bad topic", "x"}, 1, "400"},
		{[]string{"push", "onlytopic"}, 2, "usage: gmq push TOPIC BODY"},
		{[]string{"pause", "mail", "soon"}, 2, "SECONDS"},
		{[]string{"stats", "--bogus"}, 2, "bogus"},
		{[]string{"status", "sideways"}, 1, "unknown status"},
		{[]string{"stats", "--url", "http://127.0.0.1:1"}, 1, "the broker at http://127.0.0.1:1"},
	} {
		if out, code := gmq(tc.args...); code != tc.code || !strings.Contains(out, tc.says) {
			t.Errorf("gmq %v: exit %d %q, want %d with %q", tc.args, code, out, tc.code, tc.says)
		}
	}
}
