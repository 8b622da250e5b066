package memcache_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/internal/redistest"
)

// Plain gets of P+<name> made fanout children without limit (5,000 in 32 s)
// and each push to P then copied to all of them in one script (146–222 ms,
// every client stalled). Now a parent has at most max_fanout children (64
// by default), a get past it is a CLIENT_ERROR that says so, over HTTP a
// 400, and a push to P at the cap stays a short script. With fanout_on_read
// = false a read makes no child at all; a push still does (issue 20).
func TestFanoutLimit(t *testing.T) {
	b, w := fresh(t)
	for i := range 64 {
		if got := w.do(fmt.Sprintf("get P+c%02d\r\n", i)); got != "END\r\n" {
			t.Fatalf("get of child %d: %q", i, got)
		}
	}
	if got := w.do("get P+c64\r\n"); !strings.HasPrefix(got, "CLIENT_ERROR") || !strings.Contains(got, "max_fanout") {
		t.Fatalf("get of a 65th child: %q, want CLIENT_ERROR naming max_fanout", got)
	}
	code, out := brokertest.Call(t, "GET", b.URL+"/api/v1/pop?topic=P%2Bc64", "")
	if msg, _ := out["error"].(string); code != 400 || !strings.Contains(msg, "max_fanout") {
		t.Fatalf("HTTP pop of a 65th child: %d %v", code, out)
	}

	// A push to P at the cap: one script call, timed by Redis itself.
	redis := brokertest.Redis()
	mustDo(t, redis, "CONFIG", "SET", "slowlog-log-slower-than", "0")
	defer mustDo(t, redis, "CONFIG", "SET", "slowlog-log-slower-than", "10000")
	mustDo(t, redis, "SLOWLOG", "RESET")
	if got := w.do("set P 0 0 5\r\nhello\r\n"); got != "STORED\r\n" {
		t.Fatalf("set P: %q", got)
	}
	// A guard against the unbounded script coming back (146-222 ms), not a
	// benchmark: 1.4 ms on a quiet machine (docs/PERFORMANCE.md, "Fanout"),
	// 7 ms once under make test's load, so the bound is far above both.
	slowest := slowestScript(t, redis)
	t.Logf("a push to a parent with 64 children: its script took %d µs", slowest)
	if slowest > 50_000 {
		t.Errorf("a push at the cap took %d µs in Redis, want well under the 146 ms of an unbounded fanout", slowest)
	}
	if ch := brokertest.MustCall(t, 200, "GET", b.URL+"/api/v1/topics/P", "")["children"].([]any); len(ch) != 64 {
		t.Fatalf("P has %d children, want 64", len(ch))
	}
	if got := w.do("get P+c63\r\n"); !strings.Contains(got, "hello") {
		t.Errorf("child 63 got no copy: %q", got)
	}

	// A cap set on the parent, not the default: the third child is refused,
	// by a read and by a push alike; 0 lifts it.
	brokertest.MustCall(t, 200, "PUT", b.URL+"/api/v1/topics/R/config", `{"max_fanout":2}`)
	w.must("get R+a\r\n", "END\r\n")
	w.must("get R+b\r\n", "END\r\n")
	if got := w.do("get R+c\r\n"); !strings.Contains(got, "has 2 fanout children") {
		t.Fatalf("get of a third child under max_fanout 2: %q", got)
	}
	if code, out := brokertest.Call(t, "POST", b.URL+"/api/v1/jobs", `{"topic":"R+c","body":"x"}`); code != 400 {
		t.Fatalf("push to a third child under max_fanout 2: %d %v", code, out)
	}
	// An ack whose next pop would make the third child is refused whole,
	// the ack too, naming the limit (the script alone declined the child
	// silently).
	brokertest.MustCall(t, 201, "POST", b.URL+"/api/v1/jobs", `{"id":"r-1","topic":"R","body":"x"}`)
	brokertest.MustCall(t, 200, "GET", b.URL+"/api/v1/pop?topic=R", "")
	code, out = brokertest.Call(t, "POST", b.URL+"/api/v1/jobs/r-1/ack", `{"attempt":1,"next":{"topics":["R+c"]}}`)
	if msg, _ := out["error"].(string); code != 400 || !strings.Contains(msg, "max_fanout") {
		t.Fatalf("ack with a next pop of a third child: %d %v, want 400 naming max_fanout", code, out)
	}
	if state := brokertest.MustCall(t, 200, "GET", b.URL+"/api/v1/jobs/r-1", "")["state"]; state != "reserved" {
		t.Fatalf("the refused ack's job is %v, want still reserved", state)
	}
	brokertest.MustCall(t, 200, "PUT", b.URL+"/api/v1/topics/R/config", `{"max_fanout":0}`)
	w.must("get R+c\r\n", "END\r\n")

	// fanout_on_read = false: no child by a read; a push makes one.
	brokertest.MustCall(t, 200, "PUT", b.URL+"/api/v1/topics/Q/config", `{"fanout_on_read":false,"max_fanout":0}`)
	if got := w.do("get Q+r\r\n"); !strings.HasPrefix(got, "CLIENT_ERROR") || !strings.Contains(got, "fanout_on_read") {
		t.Fatalf("get of a new child with fanout_on_read false: %q", got)
	}
	brokertest.MustCall(t, 201, "POST", b.URL+"/api/v1/jobs", `{"topic":"Q+r","body":"x"}`)
	if got := w.do("get Q+r\r\n"); !strings.Contains(got, "VALUE Q+r") {
		t.Fatalf("get of the child a push made: %q", got)
	}
}

func mustDo(t *testing.T, s *redistest.Server, args ...string) string {
	t.Helper()
	out, err := s.Do(args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// slowestScript is the longest EVALSHA or EVAL in the slow log, in µs.
func slowestScript(t *testing.T, s *redistest.Server) int {
	t.Helper()
	out, err := s.CLI("SLOWLOG", "GET", "100")
	if err != nil {
		t.Fatal(err)
	}
	// redis-cli (not on a terminal) prints each entry flat, a value a line:
	// id, time, duration in µs, the command's words, the client. gmq's scripts
	// are functions (FCALL) of its library.
	lines := strings.Split(string(out), "\n")
	most := 0
	for i := 1; i < len(lines); i++ {
		if cmd := strings.ToLower(strings.TrimSpace(lines[i])); cmd == "evalsha" || cmd == "eval" || cmd == "fcall" {
			if d, err := strconv.Atoi(strings.TrimSpace(lines[i-1])); err == nil {
				most = max(most, d)
			}
		}
	}
	if most == 0 {
		t.Fatalf("no script in the slow log:\n%s", out)
	}
	return most
}
