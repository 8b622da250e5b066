package livetest_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/client"
)

// logBuffer is a WorkOptions.Log that keeps what it is told, for the test
// to read, and passes it on to the test's log.
type logBuffer struct {
	t  *testing.T
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.t.Log(string(p))
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

// cancelledJob requires job id ended cancelled, kept by its topic, and
// never failed.
func cancelledJob(t *testing.T, c *client.Client, id string) *client.Job {
	t.Helper()
	var j *client.Job
	eventually(t, 10*time.Second, "the job ended cancelled", func() bool {
		var err error
		j, err = c.Get(context.Background(), id)
		return err == nil && j.State == "cancelled"
	})
	if j.Failures != 0 || j.CancelledAt.IsZero() || j.Result != nil {
		t.Fatalf("the cancelled job: %+v; want no failure, a cancelled_at, no result", j)
	}
	return j
}

// A job cancelled while its handler runs: Work learns it at its next touch
// (TTR 2 s: a touch a second), or at the handler's own Progress, and stops
// the handler, its context cancelled with cause ErrCancelled; the job ends
// cancelled, neither acked nor failed, and Work says so in its log.
func TestWorkStopsACancelledHandler(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ttr      float64
		progress bool // the handler reports progress until it is stopped
	}{
		{"Touch", 2, false},
		{"Progress", 60, true}, // no touch within the test
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := broker(t)
			c := client.New(b.URL, nil)
			ctx := context.Background()
			keepCompleted(t, b, "exports", 3600, 0)
			if _, err := c.Push(ctx, client.Job{ID: "export-1", Topic: "exports", Body: "all orders", TTR: tc.ttr}); err != nil {
				t.Fatal(err)
			}
			started, stopped := make(chan struct{}), make(chan error, 1)
			log := &logBuffer{t: t}
			w := work(t, c, []string{"exports"}, func(ctx context.Context, j *client.Job) error {
				close(started)
				for step := 1; tc.progress && ctx.Err() == nil; step++ {
					if _, err := c.Progress(ctx, j, step, "step"); err != nil && !client.IsCancelled(err) {
						t.Errorf("progress: %v, want a 410", err)
					}
					select {
					case <-ctx.Done():
					case <-time.After(20 * time.Millisecond):
					}
				}
				<-ctx.Done()
				stopped <- context.Cause(ctx)
				return ctx.Err() // an error: Work would fail the job, were it not cancelled
			}, client.WorkOptions{Wait: time.Second, Log: log.logger()})
			<-started
			if tc.progress { // the handler reports: wait for its first report
				eventually(t, 10*time.Second, "the first progress", func() bool {
					j, err := c.Get(ctx, "export-1")
					return err == nil && j.Progress != nil
				})
			}
			j, err := c.Cancel(ctx, "export-1")
			if err != nil || j.State != "reserved" || !j.Cancelling {
				t.Fatalf("cancel: %+v %v; want the job reserved, cancelling", j, err)
			}
			select {
			case cause := <-stopped:
				if !errors.Is(cause, client.ErrCancelled) {
					t.Fatalf("the handler's context ended with %v, want ErrCancelled", cause)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the handler was not stopped within 10 s of the cancel")
			}
			cancelledJob(t, c, "export-1")
			eventually(t, 5*time.Second, "Work's log line", func() bool {
				return strings.Contains(log.String(), "its handler was stopped; neither acked nor failed")
			})
			if err, _ := w.stop(t); err != nil {
				t.Fatalf("Work: %v", err)
			}
		})
	}
}

// A handler that finishes after its job was cancelled, told nothing (no
// touch came): its ack is answered 410, which Work logs; the job stays
// cancelled, with no result.
func TestWorkLogsTheAckOfACancelledJob(t *testing.T) {
	b := broker(t)
	c := client.New(b.URL, nil)
	ctx := context.Background()
	keepCompleted(t, b, "labels", 3600, 0)
	if _, err := c.Push(ctx, client.Job{ID: "label-1", Topic: "labels", Body: "x", TTR: 60}); err != nil {
		t.Fatal(err)
	}
	started, finish := make(chan struct{}), make(chan struct{})
	log := &logBuffer{t: t}
	w := workResults(t, c, []string{"labels"}, func(ctx context.Context, j *client.Job) (any, error) {
		close(started)
		<-finish
		return "printed", nil
	}, client.WorkOptions{Wait: time.Second, Log: log.logger()})
	<-started
	if j, err := c.Cancel(ctx, "label-1"); err != nil || !j.Cancelling {
		t.Fatalf("cancel: %+v %v", j, err)
	}
	close(finish)
	cancelledJob(t, c, "label-1")
	eventually(t, 5*time.Second, "Work's log line", func() bool {
		return strings.Contains(log.String(), "cancelled while its handler ran: not acked")
	})
	if err, _ := w.stop(t); err != nil {
		t.Fatalf("Work: %v", err)
	}
}

// Progress reports a value and a log line, fenced by the delivery; Get
// shows the last progress and every line. Cancel ends a waiting job at
// once (kept, or removed where nothing keeps it) and refuses an ended one.
func TestProgressAndCancel(t *testing.T) {
	b := broker(t)
	c := client.New(b.URL, nil)
	ctx := context.Background()
	keepCompleted(t, b, "exports", 3600, 0)
	if _, err := c.Push(ctx, client.Job{ID: "export-2", Topic: "exports", Body: "x", TTR: 30}); err != nil {
		t.Fatal(err)
	}
	j, err := c.Pop(ctx, []string{"exports"}, time.Second)
	if err != nil || j == nil {
		t.Fatalf("pop: %+v %v", j, err)
	}
	if _, err := c.Progress(ctx, j, map[string]int{"rows": 4000, "of": 12000}, "page 1 of 3"); err != nil {
		t.Fatal(err)
	}
	got, err := c.Progress(ctx, j, nil, "page 2 of 3") // a line alone: the progress stays
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Progress) != `{"of":12000,"rows":4000}` || len(got.Log) != 2 || got.Log[1].Line != "page 2 of 3" ||
		got.Log[0].At.IsZero() {
		t.Fatalf("after two reports: progress %s, log %+v", got.Progress, got.Log)
	}
	stale := *j
	stale.Attempt, stale.Token = j.Attempt+1, ""
	if _, err := c.Progress(ctx, &stale, 1, ""); !client.IsConflict(err) {
		t.Fatalf("another delivery's progress: %v, want a 409", err)
	}
	if err := c.AckJob(ctx, j); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Get(ctx, "export-2"); err != nil || got.State != "completed" || len(got.Log) != 2 {
		t.Fatalf("the completed job: %+v %v; want its log kept", got, err)
	}

	for _, p := range []client.Job{{ID: "kept", Topic: "exports", Body: "x", Delay: 3600}, {ID: "plain", Topic: "plain", Body: "x"}} {
		if _, err := c.Push(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if j, err := c.Cancel(ctx, "kept"); err != nil || j.State != "cancelled" || j.CancelledAt.IsZero() {
		t.Fatalf("cancel a delayed job: %+v %v", j, err)
	}
	if _, err := c.Cancel(ctx, "kept"); !client.IsConflict(err) {
		t.Fatalf("cancel it again: %v, want a 409", err)
	}
	if j, err := c.Cancel(ctx, "plain"); err != nil || j.ID != "plain" || j.State != "cancelled" {
		t.Fatalf("cancel a job not kept: %+v %v", j, err)
	}
	if !gone(t, c, "plain") {
		t.Fatal("a cancelled job its topic does not keep was kept")
	}
	if _, err := c.Cancel(ctx, "no-such-job"); !client.IsNotFound(err) {
		t.Fatalf("cancel an unknown job: %v, want a 404", err)
	}
}

// WaitEnd is answered as soon as another worker acks the job with a
// result; with nothing to wait for it says nil after its timeout, and a
// job that is not kept (keep_results 0: its result is not kept either)
// ends "acked".
func TestWaitEnd(t *testing.T) {
	b := broker(t)
	c := client.New(b.URL, nil)
	ctx := context.Background()
	keepCompleted(t, b, "labels", 600, 0)
	brokertest.MustCall(t, 200, "PUT", b.URL+"/api/v1/topics/plain/config", `{"keep_results": 0}`)
	for _, p := range []client.Job{{ID: "label-1", Topic: "labels", Body: "x"}, {ID: "plain-1", Topic: "plain", Body: "x"}} {
		if _, err := c.Push(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if end, err := c.WaitEnd(ctx, "label-1", 200*time.Millisecond); err != nil || end != nil {
		t.Fatalf("a wait for a job nobody takes: %+v %v; want nil", end, err)
	}
	type answer struct {
		end *client.Job
		err error
	}
	ended := make(chan answer, 2)
	for _, id := range []string{"label-1", "plain-1"} {
		go func() {
			end, err := c.WaitEnd(ctx, id, 30*time.Second)
			ended <- answer{end, err}
		}()
	}
	eventually(t, 10*time.Second, "both waits under way", func() bool {
		return brokertest.MustCall(t, 200, "GET", b.URL+"/api/v1/stats", "")["current_end_waits"] == 2.0
	})
	w := workResults(t, c, []string{"labels", "plain"}, func(ctx context.Context, j *client.Job) (any, error) {
		return "printed", nil
	}, client.WorkOptions{Wait: time.Second})
	got := map[string]*client.Job{}
	for range 2 {
		select {
		case a := <-ended:
			if a.err != nil || a.end == nil {
				t.Fatalf("WaitEnd: %+v %v", a.end, a.err)
			}
			got[a.end.ID] = a.end
		case <-time.After(20 * time.Second):
			t.Fatal("WaitEnd was not answered 20 s after the worker started")
		}
	}
	if end := got["label-1"]; end == nil || end.State != "completed" || string(end.Result) != `"printed"` {
		t.Errorf("the kept job's end: %+v", end)
	}
	if end := got["plain-1"]; end == nil || end.State != "acked" {
		t.Errorf("the end of a job not kept: %+v", end)
	}
	if err, _ := w.stop(t); err != nil {
		t.Fatalf("Work: %v", err)
	}
	if _, err := c.WaitEnd(ctx, "no-such-job", 0); !client.IsNotFound(err) {
		t.Fatalf("a wait for an unknown job: %v, want a 404", err)
	}
}

// PushAndWait: a worker's result comes back in the push's own request;
// with no worker, the push answers after its wait with the job's id, for
// WaitEnd to wait on.
func TestPushAndWait(t *testing.T) {
	b := broker(t)
	c := client.New(b.URL, nil)
	ctx := context.Background()
	keepCompleted(t, b, "quotes", 600, 0)
	w := workResults(t, c, []string{"quotes"}, func(ctx context.Context, j *client.Job) (any, error) {
		return map[string]any{"price": 42, "for": j.Body}, nil
	}, client.WorkOptions{Wait: time.Second})
	pushed, end, err := c.PushAndWait(ctx, client.Job{Topic: "quotes", Body: "ada"}, 20*time.Second)
	if err != nil || end == nil || pushed.ID == "" || end.ID != pushed.ID || end.State != "completed" ||
		string(end.Result) != `{"for":"ada","price":42}` {
		t.Fatalf("PushAndWait: %+v %+v %v", pushed, end, err)
	}
	if err, _ := w.stop(t); err != nil {
		t.Fatalf("Work: %v", err)
	}

	pushed, end, err = c.PushAndWait(ctx, client.Job{ID: "quote-2", Topic: "quotes", Body: "bob"}, 200*time.Millisecond)
	if err != nil || end != nil || pushed.ID != "quote-2" || pushed.InternalID == 0 {
		t.Fatalf("PushAndWait with no worker: %+v %+v %v; want the id, no end", pushed, end, err)
	}
	if j, err := c.Get(ctx, "quote-2"); err != nil || j.State != "ready" {
		t.Fatalf("the job pushed: %+v %v", j, err)
	}
}
