package pool

import (
	"strings"
	"testing"
	"time"

	"github.com/gmq/gmq/job"
)

// A topic with job_history keeps each job's transitions with it, each with
// its time and attempt, the last job_history of them; a topic without it
// keeps none.
func TestJobHistory(t *testing.T) {
	p, ctx := newPool(t)
	if err := p.SetTopicConfig(ctx, "h", job.TopicConfig{"job_history": "20", "keep_completed": "600", "max_attempts": "5",
		"backoff": "fixed", "backoff_base": "0"}); err != nil {
		t.Fatal(err)
	}
	id := num(mustPush(t, p, ctx, job.Spec{Topic: "h", Body: "x", TTR: time.Minute}))
	j := mustPop(t, p, ctx, "h")
	if _, err := p.Fail(ctx, id, j.Attempt(), "smtp 550"); err != nil { // backoff 0: ready again at once
		t.Fatal(err)
	}
	j = mustPop(t, p, ctx, "h")
	if _, err := p.Release(ctx, id, j.Attempt(), job.KeepPriority, 0); err != nil {
		t.Fatal(err)
	}
	j = mustPop(t, p, ctx, "h")
	if _, err := p.Bury(ctx, id, j.Attempt(), job.KeepPriority); err != nil {
		t.Fatal(err)
	}
	if _, err := p.KickJob(ctx, id); err != nil {
		t.Fatal(err)
	}
	j = mustPop(t, p, ctx, "h")
	if err := p.Ack(ctx, id, j.Attempt(), `"ok"`); err != nil {
		t.Fatal(err)
	}
	got, err := p.Peek(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		event   string
		attempt int
		detail  string
	}{
		{"pushed", 0, ""}, {"reserved", 1, "test"}, {"failed", 1, "smtp 550"}, {"retried", 1, "0"},
		{"reserved", 2, "test"}, {"released", 2, "0"}, {"reserved", 3, "test"}, {"buried", 3, ""},
		{"kicked", 3, ""}, {"reserved", 4, "test"}, {"completed", 4, ""},
	}
	if len(got.History) != len(want) {
		t.Fatalf("history %+v, want %d entries", got.History, len(want))
	}
	for i, w := range want {
		e := got.History[i]
		if e.Event != w.event || e.Attempt != w.attempt || e.Detail != w.detail || e.At.IsZero() {
			t.Errorf("entry %d: %+v, want %+v", i, e, w)
		}
	}
	checkClean(t, p, ctx)

	// The cap: the last entries only. A topic without job_history: none.
	if err := p.SetTopicConfig(ctx, "h", job.TopicConfig{"job_history": "2"}); err != nil {
		t.Fatal(err)
	}
	id = num(mustPush(t, p, ctx, job.Spec{Topic: "h", Body: "y", TTR: time.Minute}))
	j = mustPop(t, p, ctx, "h")
	if _, err := p.Touch(ctx, id, j.Attempt()); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Bury(ctx, id, j.Attempt(), job.KeepPriority); err != nil {
		t.Fatal(err)
	}
	if got, err := p.Peek(ctx, id); err != nil || len(got.History) != 2 || got.History[0].Event != "reserved" || got.History[1].Event != "buried" {
		t.Fatalf("capped at 2: %+v %v", got.History, err)
	}
	plain := num(mustPush(t, p, ctx, job.Spec{Topic: "plain", Body: "z", TTR: time.Minute}))
	mustPop(t, p, ctx, "plain")
	if got, err := p.Peek(ctx, plain); err != nil || got.History != nil {
		t.Fatalf("a topic without job_history: %+v %v", got.History, err)
	}
}

// pool.Check holds each job's outcomes to the bounds no setting can raise
// (a log or history of at most 1,000 entries) and each bucket's events
// stream to its bound.
func TestCheckHoldsOutcomeBounds(t *testing.T) {
	p, ctx := newPool(t)
	id := mustPush(t, p, ctx, job.Spec{Topic: "b", Body: "x", TTR: time.Minute})
	script := contractScript(`local job = cmsgpack.unpack(redis.call('HGET', K_JOBS, ARGV[1]))
local h = {}
for i = 1, 1001 do h[i] = {i, 'pushed', 0, ''} end
job[F_HISTORY] = cjson.encode(h)
redis.call('HSET', K_JOBS, ARGV[1], cmsgpack.pack(job))
return 1`)
	b := p.keys.bucketOf("b")
	if err := script.Exec(ctx, p.client, p.keys.withTopics(b, "b"), []string{member(id)}).Error(); err != nil {
		t.Fatal(err)
	}
	for range eventsBound + 1 {
		if err := p.client.Do(ctx, p.client.B().Xadd().Key(p.keys.events(b)).Id("*").FieldValue().FieldValue("type", "pushed").Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	problems, err := p.Check(ctx)
	if err != nil || len(problems) != 2 || !strings.Contains(strings.Join(problems, "\n"), "over 1,000") ||
		!strings.Contains(strings.Join(problems, "\n"), "events stream") {
		t.Fatalf("check: %v %v, want the history and the stream over their bounds", problems, err)
	}
}
