package chaos

import (
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/gmq/gmq/internal/redistest"
	"github.com/gmq/gmq/systemtest/harness"
)

// These tests run the real gmq binary and kill it with SIGKILL, as a crash
// would, then check that no job was lost and every job is in exactly one state.

// The broker is killed after every request and started again; each request
// goes to a fresh process. Delayed jobs and expired reservations are picked
// up by the restarted broker with no manual step.
//
// No step's answer depends on how long a restart takes: c has a topic of its
// own, so neither b coming due nor a's TTR running out early can take c's
// place; a's second delivery is acked in the step that takes it (its TTR,
// one second, is then the margin for three requests, not for restarts).
func TestCrashBetweenRequests(t *testing.T) {
	srv := redistest.Start(t)
	b := harness.StartBroker(t, srv.URL())
	store := harness.Checker(t, srv.URL())
	steps := []struct {
		name string
		run  func()
	}{
		{"push a ready job with a short TTR", func() { b.Must(201, "POST", "/api/v1/jobs", `{"id":"a","topic":"t","body":"A","TTR":1}`) }},
		{"push a delayed job", func() { b.Must(201, "POST", "/api/v1/jobs", `{"id":"b","topic":"t","body":"B","delay":0.5}`) }},
		{"push a third, on a topic of its own", func() { b.Must(201, "POST", "/api/v1/jobs", `{"id":"c","topic":"u","body":"C"}`) }},
		{"reserve a", func() {
			if j := b.Must(200, "GET", "/api/v1/pop?topic=t", ``); j["id"] != "a" {
				t.Fatalf("popped %v, want a", j)
			}
		}},
		{"reserve c", func() {
			if j := b.Must(200, "GET", "/api/v1/pop?topic=u", ``); j["id"] != "c" {
				t.Fatalf("popped %v, want c", j)
			}
		}},
		{"bury c", func() { b.Must(200, "POST", "/api/v1/jobs/c/bury", `{"attempt":1}`) }},
		{"kick c", func() { b.Must(200, "POST", "/api/v1/jobs/c/kick", ``) }},
		{"a's TTR runs out and b comes due while no request is made", func() {
			// A deadline only for a broker that never moves them: a
			// loaded machine's restarts may take seconds.
			deadline := time.Now().Add(60 * time.Second)
			for {
				a := b.Must(200, "GET", "/api/v1/jobs/a", ``)
				bj := b.Must(200, "GET", "/api/v1/jobs/b", ``)
				if a["state"] == "ready" && a["timeouts"] == 1.0 && bj["state"] == "ready" {
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("a %v, b %v: the restarted broker did not move them", a, bj)
				}
				time.Sleep(50 * time.Millisecond)
			}
		}},
		{"reserve a again, refuse the first delivery's ack, ack the second", func() {
			// a comes before b: same priority, pushed first.
			if j := b.Must(200, "POST", "/api/v1/pop", `{"topics":["t"]}`); j["id"] != "a" || j["attempt"] != 2.0 {
				t.Fatalf("popped %v, want a on attempt 2", j)
			}
			b.Must(409, "POST", "/api/v1/jobs/a/ack", `{"attempt":1}`)
			b.Must(200, "POST", "/api/v1/jobs/a/ack", `{"attempt":2}`)
		}},
		{"delete b", func() { b.Must(200, "DELETE", "/api/v1/jobs/b", ``) }},
		{"reserve and ack c", func() {
			j := b.Must(200, "GET", "/api/v1/pop?topic=u", ``)
			b.Must(200, "POST", fmt.Sprintf("/api/v1/jobs/c/ack?attempt=%v", j["attempt"]), ``)
		}},
	}
	for _, s := range steps {
		s.run()
		harness.TotalsWritten(t, b, store) // the totals it counted: a kill before they are written loses them (pool/totals.go)
		b.Kill()
		harness.MustBeConsistent(t, store, "after "+s.name)
		b.Start()
	}
	stats := b.Must(200, "GET", "/api/v1/stats", ``)
	for _, k := range []string{"current_jobs_ready", "current_jobs_delayed", "current_jobs_reserved", "current_jobs_buried"} {
		if stats[k] != 0.0 {
			t.Fatalf("%s = %v at the end, want 0", k, stats[k])
		}
	}
	if stats["total_jobs"] != 3.0 || stats["total_deletes"] != 3.0 || stats["total_timeouts"] != 1.0 {
		t.Fatalf("stats %v", stats)
	}
}

// A kestrel reliable read survives a SIGKILL of the broker that holds it:
// nobody touches it any more, its TTR runs out and the item comes back.
func TestKestrelOpenReadSurvivesSIGKILL(t *testing.T) {
	srv := redistest.Start(t)
	b := harness.StartBroker(t, srv.URL())
	store := harness.Checker(t, srv.URL())
	b.RestartWith("", "[redis]\nbuckets = 4\n[bucket]\nmax_sleep = 200ms\n[jobs]\ndefault_ttr = 1s\n")
	c, err := net.DialTimeout("tcp", b.Kestrel, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, "set k 0 0 4\r\nitem\r\nget k/open\r\n"); err != nil {
		t.Fatal(err)
	}
	want := "STORED\r\nVALUE k/open 0 4\r\nitem\r\nEND\r\n"
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c, got); err != nil || string(got) != want {
		t.Fatalf("set and open: %q %v", got, err)
	}
	b.Kill()
	harness.MustBeConsistent(t, store, "killed with a read open")
	b.Start()
	if line, err := harness.Exchange(b.Kestrel, "get k/t=5000\r\n"); err != nil || line != "VALUE k/t=5000 0 4\r\n" {
		t.Fatalf("after the restart: %q %v, want the item back", line, err)
	}
	harness.MustBeConsistent(t, store, "after the item came back")
}
