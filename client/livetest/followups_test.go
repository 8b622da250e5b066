package livetest_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gmq/gmq/client"
)

// popID pops from topic and requires the job id, with body.
func popID(t *testing.T, c *client.Client, topic, id, body string) *client.Job {
	t.Helper()
	j, err := c.Pop(context.Background(), []string{topic}, 5*time.Second)
	if err != nil || j == nil || j.ID != id || j.Body != body {
		t.Fatalf("pop %s: %+v %v; want job %s with body %q", topic, j, err, id, body)
	}
	return j
}

// pushPop pushes a job to topic and pops it.
func pushPop(t *testing.T, c *client.Client, topic, id string) *client.Job {
	t.Helper()
	ctx := context.Background()
	if _, err := c.Push(ctx, client.Job{ID: id, Topic: topic, Body: id, TTR: 30}); err != nil {
		t.Fatal(err)
	}
	return popID(t, c, topic, id, id)
}

// An ack with follow-ups answers their ids, and each is then popped under
// its id: AckJobPush, AckPush by id, AckJob and AckMany with a job's
// FollowUps (Acked.Pushed).
func TestAckWithFollowUps(t *testing.T) {
	b := broker(t)
	c := client.New(b.URL, nil)
	ctx := context.Background()

	j := pushPop(t, c, "orders", "order-77")
	ids, err := c.AckJobPush(ctx, j, map[string]string{"shipped": "yes"}, []client.Job{
		{Topic: "emails", JSON: map[string]int{"order": 77}, Priority: client.Priority(1)},
		{Topic: "emails", Body: "invoice 77", Priority: client.Priority(5)},
	})
	if err != nil || len(ids) != 2 || ids[0] == ids[1] {
		t.Fatalf("AckJobPush: %q %v", ids, err)
	}
	// Acked with a result: kept, completed, for keep_results (an hour).
	if j, err := c.Get(ctx, "order-77"); err != nil || j.State != "completed" || string(j.Result) != `{"shipped":"yes"}` {
		t.Errorf("order-77 after its ack: %+v %v; want it completed with its result", j, err)
	}
	popID(t, c, "emails", ids[0], `{"order":77}`)
	popID(t, c, "emails", ids[1], "invoice 77")

	j = pushPop(t, c, "orders", "order-78")
	ids, err = c.AckPush(ctx, j.ID, j.Attempt, nil, []client.Job{{Topic: "emails", Body: "by id"}})
	if err != nil || len(ids) != 1 {
		t.Fatalf("AckPush: %q %v", ids, err)
	}
	popID(t, c, "emails", ids[0], "by id")

	j = pushPop(t, c, "orders", "order-79")
	j.FollowUps = []client.Job{{Topic: "emails", Body: "from AckJob"}}
	if err := c.AckJob(ctx, j); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Pop(ctx, []string{"emails"}, 5*time.Second); err != nil || got == nil || got.Body != "from AckJob" {
		t.Fatalf("AckJob's follow-up: %+v %v", got, err)
	}

	one, two := pushPop(t, c, "orders", "order-80"), pushPop(t, c, "orders", "order-81")
	one.FollowUps = []client.Job{{Topic: "emails", Body: "after 80"}}
	out, err := c.AckMany(ctx, []client.Job{*one, *two}, nil, 0, 0)
	if err != nil || len(out.IDs) != 2 || len(out.Failed) != 0 || len(out.Pushed) != 1 || len(out.Pushed["order-80"]) != 1 {
		t.Fatalf("AckMany: %+v %v", out, err)
	}
	popID(t, c, "emails", out.Pushed["order-80"][0], "after 80")
}

// names says whether a refusal's message names follow-up i ("push: job i").
func names(message string, i int) bool {
	return strings.Contains(message, fmt.Sprintf("push: job %d:", i))
}

// A follow-up gmq refuses (one with an id of its own, one with no topic) is
// an *Error with Status 400 that names it; the ack did nothing: the job is
// still reserved, and an ack without it goes through.
func TestAckWithBadFollowUps(t *testing.T) {
	b := broker(t)
	c := client.New(b.URL, nil)
	ctx := context.Background()
	j := pushPop(t, c, "orders", "order-1")
	for _, bad := range []client.Job{
		{ID: "mine", Topic: "emails", Body: "x"},
		{Body: "no topic"},
	} {
		ids, err := c.AckJobPush(ctx, j, nil, []client.Job{{Topic: "emails", Body: "fine"}, bad})
		var e *client.Error
		if !errors.As(err, &e) || e.Status != 400 || !names(e.Message, 1) || ids != nil {
			t.Fatalf("a bad follow-up %+v: %q %v, want a 400 naming it", bad, ids, err)
		}
		t.Logf("refused: %v", err)
		if got, err := c.Get(ctx, j.ID); err != nil || got.State != "reserved" {
			t.Fatalf("after the 400: %+v %v", got, err)
		}
	}
	if err := c.AckJob(ctx, j); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Pop(ctx, []string{"emails"}, 200*time.Millisecond); err != nil || got != nil {
		t.Fatalf("a refused ack pushed %+v (%v)", got, err)
	}
}

// A WorkResults handler that returns a client.Done ends its job with its
// follow-ups: the job is acked, each follow-up pushed once, and the worker
// (on the follow-ups' topic too) works them in turn. One whose follow-ups
// gmq refuses is failed with gmq's reason, and dies past max_attempts.
func TestWorkResultsEndsAJobWithFollowUps(t *testing.T) {
	b := broker(t)
	c := client.New(b.URL, nil)
	ctx := context.Background()
	for _, j := range []client.Job{
		{ID: "order-1", Topic: "orders", Body: "1", TTR: 30},
		{ID: "order-bad", Topic: "orders", Body: "bad", TTR: 30, Retry: &client.Retry{MaxAttempts: new(1)}},
	} {
		if _, err := c.Push(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	seen := make(chan string, 10)
	w := workResults(t, c, []string{"orders", "emails"}, func(ctx context.Context, j *client.Job) (any, error) {
		seen <- j.Topic + ":" + j.Body
		switch {
		case j.Body == "bad":
			return client.Done{Push: []client.Job{{ID: "own-id", Topic: "emails", Body: "never"}}}, nil
		case j.Topic == "orders":
			return &client.Done{Result: "shipped", Push: []client.Job{{Topic: "emails", Body: "mail for " + j.Body}}}, nil
		}
		return nil, nil
	}, client.WorkOptions{Wait: time.Second})
	var got []string
	for len(got) < 3 {
		select {
		case s := <-seen:
			got = append(got, s)
		case <-time.After(10 * time.Second):
			t.Fatalf("the worker handled %q within 10 s; want two orders and a mail", got)
		}
	}
	eventually(t, 5*time.Second, "order-bad dead", func() bool {
		j, err := c.Get(ctx, "order-bad")
		return err == nil && j.State == "dead"
	})
	if err, _ := w.stop(t); err != nil {
		t.Fatalf("WorkResults: %v", err)
	}
	slices.Sort(got)
	if want := []string{"emails:mail for 1", "orders:1", "orders:bad"}; !slices.Equal(got, want) {
		t.Errorf("handled %q, want %q", got, want)
	}
	// Acked with a result: kept, completed, for keep_results (an hour).
	if j, err := c.Get(ctx, "order-1"); err != nil || j.State != "completed" || string(j.Result) != `"shipped"` {
		t.Errorf("order-1: %+v %v; want it completed with its result", j, err)
	}
	j, err := c.Get(ctx, "order-bad")
	if err != nil || !strings.Contains(j.LastError, "400") || !strings.Contains(j.LastError, "id") {
		t.Errorf("order-bad: %+v %v; want it dead with the 400 for its follow-up", j, err)
	}
	if j, err := c.Pop(ctx, []string{"emails"}, 200*time.Millisecond); err != nil || j != nil {
		t.Errorf("left in emails: %+v %v", j, err)
	}
}
