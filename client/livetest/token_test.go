package livetest_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/client"
)

// lines is a log the test reads back.
type lines struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// Work's ack carries the delivery's token: while its handler runs, the job
// is lost and its client id pushed again and popped by another consumer
// (attempt 1, as the lost one), as after Redis lost its data. Work's ack
// then finds nothing (404), and the new job stays with its consumer; an
// ack by id and attempt alone would have deleted it.
func TestWorkAcksWithTheToken(t *testing.T) {
	b := broker(t)
	c, other := client.New(b.URL, nil), client.New(b.URL, nil)
	ctx := context.Background()
	if _, err := c.Push(ctx, client.Job{ID: "order-42", Topic: "orders", Body: "old", TTR: 30}); err != nil {
		t.Fatal(err)
	}
	handled := make(chan *client.Job, 1)
	var newer *client.Job
	var log lines
	w := work(t, c, []string{"orders"}, func(ctx context.Context, j *client.Job) error {
		if j.Token == "" {
			t.Errorf("popped job without a token: %+v", j)
		}
		brokertest.MustCall(t, 200, "DELETE", b.URL+"/api/v1/jobs/order-42", "") // lost
		if _, err := other.Push(ctx, client.Job{ID: "order-42", Topic: "orders", Body: "new", TTR: 30}); err != nil {
			t.Error(err)
		}
		var err error
		if newer, err = other.Pop(ctx, []string{"orders"}, time.Second); err != nil || newer == nil || newer.Attempt != 1 || newer.Token == j.Token {
			t.Errorf("the other consumer's pop: %+v %v", newer, err)
		}
		handled <- j
		return nil
	}, client.WorkOptions{Wait: 100 * time.Millisecond, Log: slog.New(slog.NewTextHandler(&log, nil))})
	select {
	case <-handled:
	case <-time.After(10 * time.Second):
		t.Fatal("the handler never ran")
	}
	eventually(t, 5*time.Second, "Work's ack answered", func() bool { return strings.Contains(log.String(), "could not ack") })
	if !strings.Contains(log.String(), "404") {
		t.Fatalf("Work's late ack: %s, want a 404", log.String())
	}
	w.stop(t)
	if j, err := c.Get(ctx, "order-42"); err != nil || j.State != "reserved" || j.Body != "new" {
		t.Fatalf("the new order-42 after Work's late ack: %+v %v", j, err)
	}
	if err := other.AckJob(ctx, newer); err != nil {
		t.Fatalf("the other consumer's ack: %v", err)
	}
}

// Every call given a popped job sends its token: one that names a lost
// delivery reaches nothing, though the id and attempt name a new job.
func TestJobCallsSendTheToken(t *testing.T) {
	b := broker(t)
	c := client.New(b.URL, nil)
	ctx := context.Background()
	// lost pops id and returns it, then pushes id again and pops the new
	// job: the lost delivery and the new one, both at attempt 1.
	lost := func(id string) (old, fresh *client.Job) {
		t.Helper()
		pop := func() *client.Job {
			t.Helper()
			if _, err := c.Push(ctx, client.Job{ID: id, Topic: id, Body: "x", TTR: 30}); err != nil {
				t.Fatal(err)
			}
			j, err := c.Pop(ctx, []string{id}, time.Second)
			if err != nil || j == nil || j.Attempt != 1 || j.Token == "" {
				t.Fatalf("pop %s: %+v %v", id, j, err)
			}
			return j
		}
		old = pop()
		brokertest.MustCall(t, 200, "DELETE", b.URL+"/api/v1/jobs/"+id, "")
		return old, pop()
	}
	held := func(id string) {
		t.Helper()
		if j, err := c.Get(ctx, id); err != nil || j.State != "reserved" {
			t.Errorf("%s after a late call: %+v %v, want it reserved still", id, j, err)
		}
	}
	for _, tc := range []struct {
		name string
		call func(*client.Job) error
	}{
		{"AckJob", func(j *client.Job) error { return c.AckJob(ctx, j) }},
		{"AckJobAndPop", func(j *client.Job) error { _, err := c.AckJobAndPop(ctx, j, []string{"none"}, 0); return err }},
		{"TouchJob", func(j *client.Job) error { return c.TouchJob(ctx, j) }},
		{"ReleaseJob", func(j *client.Job) error { return c.ReleaseJob(ctx, j, nil, 0) }},
		{"BuryJob", func(j *client.Job) error { return c.BuryJob(ctx, j, nil) }},
		{"FailJob", func(j *client.Job) error { _, err := c.FailJob(ctx, j, "late"); return err }},
	} {
		id := "tok-" + strings.ToLower(tc.name)
		old, fresh := lost(id)
		if err := tc.call(old); !client.IsNotFound(err) {
			t.Errorf("%s of the lost delivery: %v, want a 404", tc.name, err)
		}
		held(id)
		if err := tc.call(fresh); err != nil {
			t.Errorf("%s of the new delivery: %v", tc.name, err)
		}
	}

	oldA, _ := lost("tok-many-a")
	oldB, _ := lost("tok-many-b")
	acked, err := c.AckMany(ctx, []client.Job{*oldA}, nil, 0, 0)
	if err != nil || len(acked.IDs) != 0 || len(acked.Failed) != 1 || acked.Failed[0].Status != 404 {
		t.Fatalf("AckMany of a lost delivery: %+v %v", acked, err)
	}
	failed, err := c.FailMany(ctx, []client.Job{*oldB}, "late")
	if err != nil || len(failed.Jobs) != 0 || len(failed.Failed) != 1 || failed.Failed[0].Status != 404 {
		t.Fatalf("FailMany of a lost delivery: %+v %v", failed, err)
	}
	held("tok-many-a")
	held("tok-many-b")
	// The hazard the token closes: by id and attempt alone, the late ack
	// reaches the new job.
	if err := c.Ack(ctx, oldA.ID, oldA.Attempt); err != nil {
		t.Fatalf("Ack by id and attempt: %v", err)
	}
	if _, err := c.Get(ctx, "tok-many-a"); !client.IsNotFound(err) {
		t.Fatalf("the new tok-many-a after an ack without token: %v, want it gone", err)
	}
}
