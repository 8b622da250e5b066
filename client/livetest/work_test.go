package livetest_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gmq/gmq/client"
)

// working is a Work call under way, run by a goroutine the test owns.
type working struct {
	cancel context.CancelFunc
	done   chan error // Work's return, once
}

// work starts c.Work on topics; the test's end stops it if stop did not.
func work(t *testing.T, c *client.Client, topics []string, h client.Handler, opts client.WorkOptions) *working {
	t.Helper()
	opts = logTo(t, opts)
	return start(t, func(ctx context.Context) error { return c.Work(ctx, topics, h, opts) })
}

// workResults is work with c.WorkResults.
func workResults(t *testing.T, c *client.Client, topics []string, h client.ResultHandler, opts client.WorkOptions) *working {
	t.Helper()
	opts = logTo(t, opts)
	return start(t, func(ctx context.Context) error { return c.WorkResults(ctx, topics, h, opts) })
}

// logTo is opts with the test's log, unless they have a log of their own.
func logTo(t *testing.T, opts client.WorkOptions) client.WorkOptions {
	if opts.Log == nil {
		opts.Log = slog.New(slog.NewTextHandler(testLog{t}, nil))
	}
	return opts
}

// start runs run in a goroutine until its context is cancelled by stop, or
// at the test's end.
func start(t *testing.T, run func(ctx context.Context) error) *working {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &working{cancel: cancel, done: make(chan error, 1)}
	go func() { w.done <- run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-w.done:
		case <-time.After(10 * time.Second):
			t.Error("Work did not return within 10 s of its stop")
		}
	})
	return w
}

// stop cancels Work's context and returns what Work returned, and how long
// that took.
func (w *working) stop(t *testing.T) (error, time.Duration) {
	t.Helper()
	start := time.Now()
	w.cancel()
	select {
	case err := <-w.done:
		w.done <- err // for the cleanup
		return err, time.Since(start)
	case <-time.After(10 * time.Second):
		t.Fatal("Work did not return within 10 s of its stop")
		return nil, 0
	}
}

// testLog routes Work's log to the test's.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(string(p))
	return len(p), nil
}

// eventually waits up to within for ok to hold, polling.
func eventually(t *testing.T, within time.Duration, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(within); !ok(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", within, what)
		}
	}
}

// gone says whether the job id is no more (acked).
func gone(t *testing.T, c *client.Client, id string) bool {
	t.Helper()
	_, err := c.Get(context.Background(), id)
	if err != nil && !client.IsNotFound(err) {
		t.Fatal(err)
	}
	return client.IsNotFound(err)
}

// Work runs the handler on every job, four at a time, and acks each.
func TestWorkProcessesJobs(t *testing.T) {
	const n, concurrency = 40, 4
	b := brokerWithToken(t, nil)
	c := client.NewWithOptions(b.URL, client.Options{Token: token})
	ctx := context.Background()
	var jobs []client.Job
	for i := range n {
		jobs = append(jobs, client.Job{ID: fmt.Sprintf("w-%d", i), Topic: "work", Body: fmt.Sprint(i), TTR: 30})
	}
	if _, err := c.PushBatch(ctx, jobs); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var running, most atomic.Int32
	w := work(t, c, []string{"work"}, func(ctx context.Context, j *client.Job) error {
		now := running.Add(1)
		defer running.Add(-1)
		for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
		}
		time.Sleep(100 * time.Millisecond) // long enough for the four to overlap on a slow machine
		mu.Lock()
		defer mu.Unlock()
		seen[j.ID]++
		return nil
	}, client.WorkOptions{Concurrency: concurrency, Wait: time.Second})
	eventually(t, 10*time.Second, "every job acked", func() bool {
		return gone(t, c, jobs[n-1].ID) && gone(t, c, jobs[0].ID) && len(seenCopy(&mu, seen)) == n
	})
	if err, _ := w.stop(t); err != nil {
		t.Fatalf("Work: %v", err)
	}
	for _, j := range jobs {
		if seen[j.ID] != 1 || !gone(t, c, j.ID) {
			t.Errorf("%s: handled %d times, acked %v; want once, acked", j.ID, seen[j.ID], gone(t, c, j.ID))
		}
	}
	if got := most.Load(); got != concurrency {
		t.Errorf("at most %d jobs ran at once; want %d", got, concurrency)
	}
}

func seenCopy(mu *sync.Mutex, seen map[string]int) map[string]int {
	mu.Lock()
	defer mu.Unlock()
	out := make(map[string]int, len(seen))
	for k, v := range seen {
		out[k] = v
	}
	return out
}

// A handler's error, or its panic, fails the job with its text.
func TestWorkFailsTheJob(t *testing.T) {
	for _, tc := range []struct {
		name      string
		handler   client.Handler
		lastError string
		timeout   time.Duration // WorkOptions.Timeout
		own       float64       // the job's own Timeout, seconds
	}{
		{"error", func(context.Context, *client.Job) error { return errors.New("smtp: 550 mailbox unavailable") },
			"smtp: 550 mailbox unavailable", 0, 0},
		{"panic", func(context.Context, *client.Job) error { panic("index out of range") }, "panic: index out of range", 0, 0},
		// A handler past WorkOptions.Timeout: its context is cancelled and the
		// job failed with that reason, whatever the handler returns.
		{"timeout", func(ctx context.Context, _ *client.Job) error { <-ctx.Done(); return nil },
			"gmq: the handler ran out of time after 100ms", 100 * time.Millisecond, 0},
		// A job's own timeout, shorter than the worker's, stops the handler
		// likewise; the popped job has it.
		{"job's timeout", func(ctx context.Context, j *client.Job) error {
			if j.Timeout != 0.2 {
				return fmt.Errorf("the popped job's timeout is %v", j.Timeout)
			}
			<-ctx.Done()
			return nil
		}, "gmq: the handler ran out of time after 200ms", time.Minute, 0.2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := brokerWithToken(t, nil)
			c := client.NewWithOptions(b.URL, client.Options{Token: token})
			one := 1 // dead at its first failure: not delivered again during the test
			pushed, err := c.Push(context.Background(), client.Job{Topic: "fails", Body: "x", TTR: 30,
				Retry: &client.Retry{MaxAttempts: &one}, Timeout: tc.own})
			if err != nil {
				t.Fatal(err)
			}
			id := pushed.ID
			w := work(t, c, []string{"fails"}, tc.handler, client.WorkOptions{Wait: time.Second, Timeout: tc.timeout})
			var j *client.Job
			eventually(t, 5*time.Second, "the job failed", func() bool {
				j, err = c.Get(context.Background(), id)
				return err == nil && j.Failures > 0
			})
			if err, _ := w.stop(t); err != nil {
				t.Fatalf("Work: %v", err)
			}
			if j.LastError != tc.lastError || j.Failures != 1 || j.State != "dead" {
				t.Fatalf("job: failures %d, last_error %q, state %s; want 1, %q, dead", j.Failures, j.LastError, j.State, tc.lastError)
			}
		})
	}
}

// A handler that runs past the job's TTR keeps it: Work touches it every
// half TTR, so the second worker never gets it, and it is acked once. The
// TTR leaves each touch 2 s to land: with 2 s (1 s to land) a loaded make
// test once saw the first touch come too late, and the job delivered again.
func TestWorkTouchesPastTheTTR(t *testing.T) {
	const ttr, takes = 4 * time.Second, 5 * time.Second
	b := brokerWithToken(t, nil)
	c := client.NewWithOptions(b.URL, client.Options{Token: token})
	pushed, err := c.Push(context.Background(), client.Job{Topic: "long", Body: "x", TTR: ttr.Seconds()})
	if err != nil {
		t.Fatal(err)
	}
	id := pushed.ID
	var deliveries atomic.Int32
	finished := make(chan struct{})
	w := work(t, c, []string{"long"}, func(ctx context.Context, j *client.Job) error {
		if deliveries.Add(1) > 1 {
			return errors.New("delivered twice")
		}
		defer close(finished)
		select {
		case <-time.After(takes):
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}, client.WorkOptions{Concurrency: 2, Wait: time.Second})
	select {
	case <-finished:
	case <-time.After(takes + 3*time.Second):
		t.Fatal("the handler never finished")
	}
	eventually(t, 2*time.Second, "the job acked", func() bool { return gone(t, c, id) })
	if err, _ := w.stop(t); err != nil {
		t.Fatalf("Work: %v", err)
	}
	if got := deliveries.Load(); got != 1 {
		t.Fatalf("delivered %d times; want once", got)
	}
}

// A stop while a job is in hand pops no more, lets the handler finish on a
// context the stop did not cancel, acks the job, and returns nil.
func TestWorkStopsGracefully(t *testing.T) {
	const takes = time.Second
	b := brokerWithToken(t, nil)
	c := client.NewWithOptions(b.URL, client.Options{Token: token})
	ids, err := c.PushBatch(context.Background(), []client.Job{{Topic: "stop", Body: "1", TTR: 30}, {Topic: "stop", Body: "2", TTR: 30}})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	var handlerErr atomic.Value
	w := work(t, c, []string{"stop"}, func(ctx context.Context, j *client.Job) error {
		close(started)
		time.Sleep(takes)
		handlerErr.Store(fmt.Sprint(ctx.Err()))
		return nil
	}, client.WorkOptions{Wait: time.Second})
	<-started
	err, took := w.stop(t)
	if err != nil || took < takes/2 {
		t.Fatalf("Work returned %v after %v; want nil once the job in hand is done", err, took)
	}
	if got := handlerErr.Load(); got != "<nil>" {
		t.Errorf("the handler's context ended: %v", got)
	}
	if !gone(t, c, ids[0]) {
		t.Error("the job in hand was not acked")
	}
	if j, err := c.Get(context.Background(), ids[1]); err != nil || j.State != "ready" {
		t.Errorf("the next job: %+v %v; want it left ready", j, err)
	}
}

// Without the token the broker refuses every call (401), and Work returns
// that at once rather than trying for ever; with it, they work.
func TestToken(t *testing.T) {
	b := brokerWithToken(t, nil)
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		token string
		ok    bool
	}{
		{"none", "", false},
		{"wrong", "not-the-token", false},
		{"right", token, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := client.NewWithOptions(b.URL, client.Options{Token: tc.token})
			_, pushErr := c.Push(ctx, client.Job{Topic: "tok", Body: "x"})
			_, popErr := c.Pop(ctx, []string{"tok"}, 0)
			for _, err := range []error{pushErr, popErr} {
				if tc.ok && err != nil || !tc.ok && !client.IsUnauthorized(err) {
					t.Errorf("%v; want ok %v, else a 401", err, tc.ok)
				}
			}
			if tc.ok {
				return
			}
			done := make(chan error, 1)
			go func() {
				done <- c.Work(ctx, []string{"tok"}, func(context.Context, *client.Job) error { return nil }, client.WorkOptions{})
			}()
			select {
			case err := <-done:
				if !client.IsUnauthorized(err) {
					t.Errorf("Work: %v; want the 401", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Work kept trying without the token")
			}
		})
	}
}
