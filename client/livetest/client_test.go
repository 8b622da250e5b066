package livetest_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gmq/gmq/client"
)

func TestGoClient(t *testing.T) {
	b := broker(t)
	c := client.New(b.URL, nil)
	ctx := context.Background()
	pushed, err := c.Push(ctx, client.Job{ID: "go-1", Topic: "t", Body: "x", TTR: 30, Priority: client.Priority(5)})
	if err != nil || pushed.ID != "go-1" || pushed.InternalID == 0 || pushed.Unique != "" {
		t.Fatalf("push: %+v %v", pushed, err)
	}
	if _, err := c.Push(ctx, client.Job{ID: "go-1", Topic: "t", Body: "x"}); !client.IsConflict(err) {
		t.Fatalf("duplicate push: %v", err)
	}
	ids, err := c.PushBatch(ctx, []client.Job{{Topic: "t", Body: "y"}, {Topic: "t", Body: "z", Delay: 60}})
	if err != nil || len(ids) != 2 {
		t.Fatalf("batch: %v %v", ids, err)
	}
	job, err := c.Pop(ctx, []string{"t"}, time.Second)
	if err != nil || job == nil || job.ID != "go-1" || job.Attempt != 1 || job.State != "reserved" {
		t.Fatalf("pop: %+v %v", job, err)
	}
	if err := c.Touch(ctx, job.ID, job.Attempt); err != nil {
		t.Fatal(err)
	}
	if err := c.Release(ctx, job.ID, job.Attempt, nil, 0); err != nil {
		t.Fatal(err)
	}
	job, err = c.Pop(ctx, []string{"t"}, time.Second)
	if err != nil || job.Attempt != 2 {
		t.Fatalf("pop again: %+v %v", job, err)
	}
	if err := c.Ack(ctx, job.ID, 1); !client.IsConflict(err) {
		t.Fatalf("ack of the first delivery: %v", err)
	}
	if err := c.Bury(ctx, job.ID, job.Attempt, client.Priority(1)); err != nil {
		t.Fatal(err)
	}
	if err := c.Ack(ctx, "nobody", 0); !client.IsNotFound(err) {
		t.Fatalf("ack of an unknown job: %v", err)
	}
	job, err = c.Pop(ctx, []string{"t"}, 0)
	if err != nil || job == nil || job.Body != "y" {
		t.Fatalf("pop the batch job: %+v %v", job, err)
	}
	if job, err := c.Pop(ctx, []string{"t"}, 200*time.Millisecond); err != nil || job != nil {
		t.Fatalf("pop with only delayed and buried jobs: %+v %v", job, err)
	}
}

// A batch consumer pops and acks several jobs a request.
func TestGoClientBatches(t *testing.T) {
	b := broker(t)
	c := client.New(b.URL, nil)
	ctx := context.Background()
	var jobs []client.Job
	for i := range 5 {
		jobs = append(jobs, client.Job{Topic: "batch", Body: fmt.Sprint(i), TTR: 30})
	}
	if _, err := c.PushBatch(ctx, jobs); err != nil {
		t.Fatal(err)
	}
	got, err := c.PopMany(ctx, []string{"batch"}, 3, time.Second)
	if err != nil || len(got) != 3 || got[0].Body != "0" || got[2].Body != "2" || got[1].Attempt != 1 {
		t.Fatalf("pop 3: %+v %v", got, err)
	}
	stale := client.Job{ID: got[2].ID, Attempt: 9} // an older (here: unknown) delivery, by attempt alone
	acked, err := c.AckMany(ctx, []client.Job{got[0], got[1], stale}, []string{"batch"}, 10, time.Second)
	if err != nil || len(acked.IDs) != 2 || len(acked.Failed) != 1 || acked.Failed[0].Status != 409 {
		t.Fatalf("ack 3, one stale: %+v %v", acked, err)
	}
	if len(acked.Next) != 2 || acked.Next[0].Body != "3" || acked.Next[1].Body != "4" {
		t.Fatalf("the next batch: %+v", acked.Next)
	}
	acked, err = c.AckMany(ctx, append(acked.Next, got[2]), nil, 0, 0)
	if err != nil || len(acked.IDs) != 3 || len(acked.Failed) != 0 || acked.Next != nil {
		t.Fatalf("ack the rest: %+v %v", acked, err)
	}
	if got, err := c.PopMany(ctx, []string{"batch"}, 3, 100*time.Millisecond); err != nil || got != nil {
		t.Fatalf("pop of an empty topic: %+v %v", got, err)
	}
}

// The Go producer and consumer examples run as the README shows them,
// against a live broker (the other clients' run in their own folders).
func TestExamples(t *testing.T) {
	b := broker(t)
	dir := t.TempDir()
	for _, name := range []string{"producer", "consumer"} {
		build := exec.Command("go", "build", "-o", filepath.Join(dir, name), "./examples/"+name)
		build.Dir = clientDir
		out, err := build.CombinedOutput()
		if err != nil {
			t.Fatalf("build %s: %v\n%s", name, err, out)
		}
	}
	out, err := exec.Command(filepath.Join(dir, "producer"), "-url", b.URL, "-topic", "go-ex", "-n", "6").CombinedOutput()
	if err != nil || strings.Count(string(out), "pushed ") != 6 {
		t.Fatalf("producer: %v\n%s", err, out)
	}
	out, err = exec.Command(filepath.Join(dir, "consumer"), "-url", b.URL, "-topic", "go-ex", "-n", "6", "-idle", "2s").CombinedOutput()
	if err != nil || strings.Count(string(out), "done ") != 6 {
		t.Fatalf("consumer: %v\n%s", err, out)
	}
}

// Fail and FailMany: a job's own retry policy, backoff, then dead.
func TestGoClientFailures(t *testing.T) {
	b := broker(t)
	c := client.New(b.URL, nil)
	ctx := context.Background()
	two := 2
	if _, err := c.Push(ctx, client.Job{ID: "flaky", Topic: "f", Body: "x", Retry: &client.Retry{MaxAttempts: &two, Backoff: "fixed", Base: 0.01}}); err != nil {
		t.Fatal(err)
	}
	job, err := c.Pop(ctx, []string{"f"}, time.Second)
	if err != nil || job == nil {
		t.Fatalf("pop: %+v %v", job, err)
	}
	if got, err := c.Fail(ctx, job.ID, job.Attempt, "boom"); err != nil || got.State != "delayed" || got.Failures != 1 ||
		got.NextAttemptAt == nil || got.Due == nil || !got.NextAttemptAt.Equal(*got.Due) {
		t.Fatalf("fail: %+v %v; want delayed, 1 failure, its next attempt at its due time", got, err)
	}
	if job, err = c.Pop(ctx, []string{"f"}, 2*time.Second); err != nil || job == nil {
		t.Fatalf("pop after the backoff: %+v %v", job, err)
	}
	out, err := c.FailMany(ctx, []client.Job{*job, {ID: "nobody"}}, "boom again")
	if err != nil || len(out.Jobs) != 1 || out.Jobs[0].State != "dead" || out.Jobs[0].LastError != "boom again" ||
		len(out.Failed) != 1 || out.Failed[0].Status != 404 {
		t.Fatalf("fail many: %+v %v", out, err)
	}
	// A look at the dead job shows its retry policy and both failures' errors.
	dead, err := c.Get(ctx, "flaky")
	if err != nil || dead.MaxAttempts == nil || *dead.MaxAttempts != 2 || dead.NextAttemptAt != nil || len(dead.Errors) != 2 ||
		dead.Errors[0] != (client.FailureError{Attempt: 1, At: dead.Errors[0].At, Error: "boom"}) ||
		dead.Errors[1].Error != "boom again" || dead.Errors[1].Attempt != 2 || dead.Errors[0].At.IsZero() {
		t.Fatalf("get: %+v %v; want max attempts 2, no next attempt, the errors boom and boom again", dead, err)
	}
}

// Update changes a waiting job in place; a reserved one is refused (409).
func TestGoClientUpdate(t *testing.T) {
	b := broker(t)
	c := client.New(b.URL, nil)
	ctx := context.Background()
	pushed, err := c.Push(ctx, client.Job{Topic: "up", Body: "draft", Delay: 3600, Priority: client.Priority(10)})
	if err != nil {
		t.Fatal(err)
	}
	id := pushed.ID
	now, body := time.Duration(0), "final"
	job, err := c.Update(ctx, id, client.Update{Delay: &now, Priority: client.Priority(1), Body: &body})
	if err != nil || job.State != "ready" || *job.Priority != 1 || job.Body != "final" {
		t.Fatalf("update: %+v %v", job, err)
	}
	if job, err = c.Pop(ctx, []string{"up"}, time.Second); err != nil || job == nil || job.ID != id || job.Body != "final" {
		t.Fatalf("pop after the update: %+v %v", job, err)
	}
	if _, err := c.Update(ctx, id, client.Update{Priority: client.Priority(5)}); !client.IsConflict(err) {
		t.Fatalf("update of a reserved job: %v", err)
	}
}
