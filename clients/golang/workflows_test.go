package golang_test

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
	j := popID(t, c, "etl-extract", "extract-1", "x")
	if err := c.AckResult(ctx, j.ID, j.Attempt, map[string]int{"rows": 3}); err != nil {
		t.Fatal(err)
	}
	popID(t, c, "etl-load", "load-1", "y")
	var bad *client.Error
	if _, err := c.Push(ctx, client.Job{Topic: "etl-load", Body: "z", After: []string{"no-such-job"}}); !errors.As(err, &bad) || bad.Status != 400 {
		t.Fatalf("a push after a job that is not there: %v, want a 400", err)
	}
}

// CreateBatch pushes a batch's jobs; once they are acked, its on_complete
// callback comes once with the summary, GetBatch shows it done; an open
// batch takes AddToBatch until CloseBatch; CancelBatch cancels one.
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
}
