package livetest_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/client"
)

// keepCompleted sets topic's keep_completed (seconds), and its max_result
// (bytes) when maxResult > 0.
func keepCompleted(t *testing.T, b *brokertest.Broker, topic string, seconds, maxResult int) {
	t.Helper()
	config := map[string]int{"keep_completed": seconds}
	if maxResult > 0 {
		config["max_result"] = maxResult
	}
	body, err := json.Marshal(config)
	if err != nil {
		t.Fatal(err)
	}
	brokertest.MustCall(t, 200, "PUT", b.URL+"/api/v1/topics/"+topic+"/config", string(body))
}

// completed gets job id and requires it completed with result (its JSON
// text, "" for none).
func completed(t *testing.T, c *client.Client, id, result string) *client.Job {
	t.Helper()
	j, err := c.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("get %s: %v", id, err)
	}
	if j.State != "completed" || j.CompletedAt.IsZero() || string(j.Result) != result {
		t.Fatalf("job %s: state %q, completed at %v, result %s; want completed with %q", id, j.State, j.CompletedAt, j.Result, result)
	}
	return j
}

// WorkResults acks each job with its handler's result (through its ack and
// pop), which a topic with keep_completed keeps: Get shows the job
// completed with it. A handler's error still fails the job; a result over
// the topic's max_result (413) is dropped and the job acked without it.
func TestWorkResultsKeepsResults(t *testing.T) {
	b := broker(t)
	c := client.New(b.URL, nil)
	ctx := context.Background()
	keepCompleted(t, b, "reports", 3600, 64)
	ids := []string{"report-1", "report-2", "report-3", "report-big", "report-bad"}
	var jobs []client.Job
	for _, id := range ids {
		jobs = append(jobs, client.Job{ID: id, Topic: "reports", Body: id, TTR: 30, Retry: &client.Retry{MaxAttempts: new(1)}})
	}
	if _, err := c.PushBatch(ctx, jobs); err != nil {
		t.Fatal(err)
	}
	noPrinter := errors.New("no printer")
	w := workResults(t, c, []string{"reports"}, func(ctx context.Context, j *client.Job) (any, error) {
		switch j.ID {
		case "report-big":
			return strings.Repeat("x", 100), nil
		case "report-bad":
			return map[string]string{"partial": "yes"}, noPrinter
		}
		return map[string]any{"url": "/r/" + j.ID + ".pdf", "pages": 7}, nil
	}, client.WorkOptions{Wait: time.Second})
	eventually(t, 10*time.Second, "every report settled", func() bool {
		for _, id := range ids {
			if j, err := c.Get(ctx, id); err != nil || j.State != "completed" && j.State != "dead" {
				return false
			}
		}
		return true
	})
	if err, _ := w.stop(t); err != nil {
		t.Fatalf("WorkResults: %v", err)
	}
	for _, id := range ids[:3] {
		completed(t, c, id, `{"pages":7,"url":"/r/`+id+`.pdf"}`)
	}
	completed(t, c, "report-big", "")
	if j, err := c.Get(ctx, "report-bad"); err != nil || j.State != "dead" || j.Result != nil || j.LastError != noPrinter.Error() {
		t.Errorf("the failed report: %+v %v", j, err)
	}
}

// The plain acks carry a result: AckResult by id, AckJobResult, AckJob and
// AckMany with the job's Result. Without one a kept job is completed with
// none; a result too big is a 413 and the job stays reserved.
func TestAckWithResult(t *testing.T) {
	b := broker(t)
	c := client.New(b.URL, nil)
	ctx := context.Background()
	keepCompleted(t, b, "acks", 3600, 64)
	pop := func(id string) *client.Job {
		t.Helper()
		if _, err := c.Push(ctx, client.Job{ID: id, Topic: "acks", Body: "x", TTR: 30}); err != nil {
			t.Fatal(err)
		}
		j, err := c.Pop(ctx, []string{"acks"}, time.Second)
		if err != nil || j == nil || j.ID != id {
			t.Fatalf("pop %s: %+v %v", id, j, err)
		}
		return j
	}
	j := pop("by-id")
	if err := c.AckResult(ctx, j.ID, j.Attempt, 42); err != nil {
		t.Fatal(err)
	}
	completed(t, c, "by-id", "42")

	j = pop("too-big")
	var tooBig *client.Error
	if err := c.AckJobResult(ctx, j, strings.Repeat("x", 100)); !errors.As(err, &tooBig) || tooBig.Status != 413 {
		t.Fatalf("a result over max_result: %v, want a 413", err)
	}
	if got, err := c.Get(ctx, j.ID); err != nil || got.State != "reserved" {
		t.Fatalf("after the 413: %+v %v", got, err)
	}
	if err := c.AckJobResult(ctx, j, []string{"a", "b"}); err != nil {
		t.Fatal(err)
	}
	completed(t, c, "too-big", `["a","b"]`)

	j = pop("job-result")
	j.Result = json.RawMessage(`{"ok": true}`)
	if err := c.AckJob(ctx, j); err != nil {
		t.Fatal(err)
	}
	completed(t, c, "job-result", `{"ok":true}`)

	one, two := pop("many-1"), pop("many-2")
	one.Result = json.RawMessage(`"first"`)
	if out, err := c.AckMany(ctx, []client.Job{*one, *two}, nil, 0, 0); err != nil || len(out.IDs) != 2 {
		t.Fatalf("AckMany: %+v %v", out, err)
	}
	completed(t, c, "many-1", `"first"`)
	completed(t, c, "many-2", "")
}

// A push's KeepCompleted overrides its topic's, 0 included: Get shows it,
// and the ack keeps the job (or deletes it) by it.
func TestPushKeepCompleted(t *testing.T) {
	b := broker(t)
	c := client.New(b.URL, nil)
	ctx := context.Background()
	keepCompleted(t, b, "kept", 3600, 0)
	for _, j := range []client.Job{
		{ID: "mine", Topic: "mail", Body: "x", KeepCompleted: new(600.0)}, // its topic keeps none
		{ID: "none", Topic: "kept", Body: "x", KeepCompleted: new(0.0)},   // its topic keeps an hour
		{ID: "topic-keeps", Topic: "kept", Body: "x"},
	} {
		if _, err := c.Push(ctx, j); err != nil {
			t.Fatal(err)
		}
		got, err := c.Get(ctx, j.ID)
		if err != nil || (got.KeepCompleted == nil) != (j.KeepCompleted == nil) ||
			j.KeepCompleted != nil && *got.KeepCompleted != *j.KeepCompleted {
			t.Fatalf("%s as pushed: %+v %v", j.ID, got, err)
		}
		popped, err := c.Pop(ctx, []string{j.Topic}, time.Second)
		if err != nil || popped == nil || popped.ID != j.ID {
			t.Fatalf("pop %s: %+v %v", j.ID, popped, err)
		}
		if err := c.AckJobResult(ctx, popped, "done"); err != nil {
			t.Fatal(err)
		}
	}
	if j := completed(t, c, "mine", `"done"`); j.KeepCompleted == nil || *j.KeepCompleted != 600 {
		t.Errorf("mine's keep_completed: %v", j.KeepCompleted)
	}
	completed(t, c, "topic-keeps", `"done"`)
	if !gone(t, c, "none") {
		t.Error("a job pushed with KeepCompleted 0 was kept after its ack")
	}
}
