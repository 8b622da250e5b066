package livetest_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/gmq/gmq/client"
)

// A job pushed with After waits until its dependencies complete, then is
// popped with their results kept (Get).
func TestGoClientAfter(t *testing.T) {
	b := broker(t)
	c := client.New(b.URL, nil)
	ctx := context.Background()
	if _, err := c.Push(ctx, client.Job{ID: "extract-1", Topic: "etl-extract", Body: "x", TTR: 30}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Push(ctx, client.Job{ID: "load-1", Topic: "etl-load", Body: "y", TTR: 30, After: []string{"extract-1"}, WithResults: true}); err != nil {
		t.Fatal(err)
	}
	if j, err := c.Get(ctx, "load-1"); err != nil || j.State != "waiting" || len(j.After) != 1 {
		t.Fatalf("the dependent: %+v %v, want waiting", j, err)
	}
	if j, err := c.Get(ctx, "load-1"); err != nil || len(j.WaitingFor) != 1 {
		t.Fatalf("the dependent waits for: %+v %v, want one job", j, err)
	}
	j := popID(t, c, "etl-extract", "extract-1", "x")
	if err := c.AckResult(ctx, j.ID, j.Attempt, map[string]int{"rows": 3}); err != nil {
		t.Fatal(err)
	}
	popID(t, c, "etl-load", "load-1", "y")
	if j, err := c.Get(ctx, "load-1"); err != nil || len(j.DependencyResults) != 1 {
		t.Fatalf("the dependent's results: %+v %v, want one", j, err)
	} else {
		for _, r := range j.DependencyResults {
			if string(r) != `{"rows":3}` {
				t.Fatalf("the dependency's result: %s", r)
			}
		}
	}
	var bad *client.Error
	if _, err := c.Push(ctx, client.Job{Topic: "etl-load", Body: "z", After: []string{"no-such-job"}}); !errors.As(err, &bad) || bad.Status != 400 {
		t.Fatalf("a push after a job that is not there: %v, want a 400", err)
	}
}

// CreateBatch pushes a batch's jobs; once they are acked, its on_complete
// callback comes once with the summary, GetBatch shows it done; an open
// batch takes AddToBatch until CloseBatch; CancelBatch cancels one;
// ListBatches lists them, newest first.
func TestGoClientBatch(t *testing.T) {
	b := broker(t)
	c := client.New(b.URL, nil)
	ctx := context.Background()
	id, ids, err := c.CreateBatch(ctx, client.NewBatch{
		Jobs:       []client.Job{{Topic: "parts", Body: "1", TTR: 30}, {Topic: "parts", Body: "2", TTR: 30}},
		OnComplete: &client.Job{Topic: "parts-done", Body: "report", WithResult: true},
		Meta:       map[string]int{"report": 42},
	})
	if err != nil || id == "" || len(ids) != 2 {
		t.Fatalf("CreateBatch: %q %q %v", id, ids, err)
	}
	for _, want := range ids {
		j, err := c.Pop(ctx, []string{"parts"}, 5*time.Second)
		if err != nil || j == nil || j.Batch != id || j.ID != want {
			t.Fatalf("a batch's job: %+v %v", j, err)
		}
		if err := c.AckJob(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	done, err := c.Pop(ctx, []string{"parts-done"}, 10*time.Second)
	if err != nil || done == nil {
		t.Fatalf("on_complete: %+v %v", done, err)
	}
	var body struct {
		Body   string `json:"body"`
		Result struct {
			State     string         `json:"state"`
			Completed int            `json:"completed"`
			Meta      map[string]int `json:"meta"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(done.Body), &body); err != nil || body.Body != "report" || body.Result.State != "done" ||
		body.Result.Completed != 2 || body.Result.Meta["report"] != 42 {
		t.Fatalf("on_complete's body %s: %v", done.Body, err)
	}
	if bt, err := c.GetBatch(ctx, id); err != nil || bt.State != "done" || bt.Completed != 2 || bt.Pending != 0 || bt.FinishedAt.IsZero() {
		t.Fatalf("GetBatch: %+v %v", bt, err)
	}

	open, _, err := c.CreateBatch(ctx, client.NewBatch{Open: true})
	if err != nil {
		t.Fatal(err)
	}
	if added, err := c.AddToBatch(ctx, open, []client.Job{{Topic: "later", Body: "x", Delay: 3600}}); err != nil || len(added) != 1 {
		t.Fatalf("AddToBatch: %q %v", added, err)
	}
	if bt, err := c.CloseBatch(ctx, open); err != nil || bt.State != "closed" || bt.Total != 1 {
		t.Fatalf("CloseBatch: %+v %v", bt, err)
	}
	if n, err := c.CancelBatch(ctx, open); err != nil || n != 1 {
		t.Fatalf("CancelBatch: %d %v", n, err)
	}
	var missing *client.Error
	if _, err := c.GetBatch(ctx, "12345"); !errors.As(err, &missing) || missing.Status != 404 {
		t.Fatalf("GetBatch of none: %v, want a 404", err)
	}
	// ListBatches: the newest first, a page at a time.
	page, err := c.ListBatches(ctx, 0, 1)
	if err != nil || page.Total != 2 || len(page.Batches) != 1 || page.Batches[0].ID != open {
		t.Fatalf("ListBatches(0, 1): %+v %v, want the open batch of 2", page, err)
	}
	if page, err = c.ListBatches(ctx, 1, 10); err != nil || len(page.Batches) != 1 || page.Batches[0].ID != id || page.Offset != 1 {
		t.Fatalf("ListBatches(1, 10): %+v %v, want the first batch", page, err)
	}
	if _, err := c.ListBatches(ctx, 5000, 1); !errors.As(err, &missing) || missing.Status != 400 {
		t.Fatalf("ListBatches past its depth: %v, want a 400", err)
	}
}

// A job pushed with Then has it pushed when it completes (with its
// result, WithResult), one with OnDead when it dies; read back, each
// names its follow-ups' ids.
func TestGoClientThenAndOnDead(t *testing.T) {
	b := broker(t)
	c := client.New(b.URL, nil)
	ctx := context.Background()
	once := 1
	if _, err := c.Push(ctx, client.Job{ID: "resize-1", Topic: "images", Body: "img 1", TTR: 30,
		Then:   []client.Job{{Topic: "thumbs", Body: "thumb 1", WithResult: true, Then: []client.Job{{Topic: "notify", Body: "ready"}}}},
		OnDead: []client.Job{{Topic: "alerts", Body: "img 1 failed"}}}); err != nil {
		t.Fatal(err)
	}
	if j, err := c.Get(ctx, "resize-1"); err != nil || len(j.ThenIDs) != 1 || len(j.OnDeadIDs) != 1 {
		t.Fatalf("read back: %+v %v, want one id each", j, err)
	}
	j := popID(t, c, "images", "resize-1", "img 1")
	if err := c.AckResult(ctx, j.ID, j.Attempt, map[string]int{"w": 64}); err != nil {
		t.Fatal(err)
	}
	thumb, err := c.Pop(ctx, []string{"thumbs"}, 5*time.Second)
	if err != nil || thumb == nil || thumb.Body != `{"body":"thumb 1","result":{"w":64}}` {
		t.Fatalf("then: %+v %v", thumb, err)
	}
	if err := c.AckJob(ctx, thumb); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Pop(ctx, []string{"notify"}, 5*time.Second); err != nil || n == nil || n.Body != "ready" {
		t.Fatalf("then's then: %+v %v", n, err)
	}
	if _, err := c.Push(ctx, client.Job{ID: "resize-2", Topic: "images", Body: "img 2", TTR: 30, Retry: &client.Retry{MaxAttempts: &once},
		OnDead: []client.Job{{Topic: "alerts", Body: "img 2 failed"}}}); err != nil {
		t.Fatal(err)
	}
	j = popID(t, c, "images", "resize-2", "img 2")
	if _, err := c.FailJob(ctx, j, "corrupt"); err != nil {
		t.Fatal(err)
	}
	if a, err := c.Pop(ctx, []string{"alerts"}, 5*time.Second); err != nil || a == nil || a.Body != "img 2 failed" {
		t.Fatalf("on_dead: %+v %v", a, err)
	}
	if got, err := c.Pop(ctx, []string{"alerts"}, 0); err != nil || got != nil {
		t.Fatalf("resize-1's on_dead, though it completed: %+v %v", got, err)
	}
}
