package brokers

import (
	"fmt"
	"io"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/gmq/gmq/internal/redistest"
	"github.com/gmq/gmq/systemtest/harness"
)

// A wait for a job's end on one broker is answered when a consumer of
// another broker on the same Redis acks it (the end crosses brokers on the
// wake channel), and a wait longer than the request timeout (5 s) runs its
// whole length and answers 204, not a 503 at the request timeout.
func TestWaitForTheEndAcrossBrokers(t *testing.T) {
	if testing.Short() {
		t.Skip("two brokers, and a wait of 7 s")
	}
	t.Parallel()
	srv := redistest.Start(t)
	a, b := harness.StartBroker(t, srv.URL()), harness.StartBroker(t, srv.URL())
	call := func(p *harness.BrokerProc, want int, method, path, body string) harness.Answer {
		t.Helper()
		r, err := p.Do(method, path, body)
		if err != nil || r.Code != want {
			t.Fatalf("%s %s %s: %d %v %v, want %d", method, path, body, r.Code, r.Body, err, want)
		}
		return r
	}
	call(a, 200, "PUT", "/api/v1/topics/reports/config", `{"keep_completed": 600}`)
	call(a, 201, "POST", "/api/v1/jobs", `{"id":"report-1","topic":"reports","body":"x"}`)
	call(a, 201, "POST", "/api/v1/jobs", `{"id":"never","topic":"idle","body":"x"}`)

	long := make(chan harness.Answer, 1)
	start := time.Now()
	go func() {
		r, _ := a.Do("GET", "/api/v1/jobs/never/wait?timeout=7", "")
		long <- r
	}()
	answered := make(chan harness.Answer, 1)
	go func() {
		r, _ := a.Do("GET", "/api/v1/jobs/report-1/wait?timeout=60", "")
		answered <- r
	}()
	harness.WaitUntil(t, "both waits under way on broker a", func() bool {
		r, err := a.Do("GET", "/api/v1/stats", "")
		return err == nil && r.Body["current_end_waits"] == 2.0
	})
	j := call(b, 200, "GET", "/api/v1/pop?topic=reports", "")
	call(b, 200, "POST", "/api/v1/jobs/report-1/ack", fmt.Sprintf(`{"attempt":%v,"result":"done"}`, j.Body["attempt"]))
	select {
	case r := <-answered:
		if r.Code != 200 || r.Body["state"] != "completed" || r.Body["result"] != "done" {
			t.Fatalf("the wait on broker a: %d %v, want the job completed by broker b", r.Code, r.Body)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the wait on broker a was not answered 20 s after broker b acked the job")
	}
	r := <-long
	if r.Code != 204 || time.Since(start) < 7*time.Second {
		t.Fatalf("a wait of 7 s answered %d after %v, want 204 after its 7 s", r.Code, time.Since(start))
	}
}

// An events stream, which never ends on its own, ends as soon as its
// broker begins to stop (SIGTERM), not after the shutdown grace (10 s),
// and the broker exits cleanly.
func TestEventsEndAtShutdown(t *testing.T) {
	if testing.Short() {
		t.Skip("a broker process")
	}
	t.Parallel()
	srv := redistest.Start(t)
	b := harness.StartBroker(t, srv.URL())
	resp, err := http.Get(b.URL("/api/v1/events?topics=any"))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("events: %v %v", resp, err)
	}
	defer resp.Body.Close()
	ended := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, resp.Body) // until the stream ends
		close(ended)
	}()
	start := time.Now()
	if err := b.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ended:
	case <-time.After(8 * time.Second): // under the 10 s grace, which it must not wait out
		t.Fatal("the events stream was still open 8 s after SIGTERM")
	}
	b.ExitsCleanly(t, time.Minute, "SIGTERM")
	t.Logf("the stream ended %v after SIGTERM", time.Since(start))
}
