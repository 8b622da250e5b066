package pool

import (
	"errors"
	"testing"
	"time"

	"github.com/gmq/gmq/job"
)

// UpdateJob moves a waiting job between ready and delayed by its new delay,
// reorders it by its new priority, and swaps its body (the topic's byte
// count follows); a reserved job is not changed.
func TestUpdateJob(t *testing.T) {
	p, ctx := newPool(t)
	dur := func(d time.Duration) *time.Duration { return &d }
	pri := func(n uint32) *uint32 { return &n }
	str := func(s string) *string { return &s }
	a := num(mustPush(t, p, ctx, job.Spec{Topic: "u", Body: "aaaa", Priority: 10, TTR: time.Minute}))
	b := num(mustPush(t, p, ctx, job.Spec{Topic: "u", Body: "bb", Priority: 10, TTR: time.Minute}))

	for _, c := range []struct {
		name  string
		id    string
		u     job.Update
		state job.State
	}{
		{"delay a ready job", a, job.Update{Delay: dur(time.Hour)}, job.Delayed},
		{"make a delayed job ready", a, job.Update{Delay: dur(0), Priority: pri(1)}, job.Ready},
		{"new priority, same place", b, job.Update{Priority: pri(0)}, job.Ready},
		{"new body", b, job.Update{Body: str("bbbbbbbb")}, job.Ready},
	} {
		j, err := p.UpdateJob(ctx, c.id, c.u)
		if err != nil || j.State != c.state {
			t.Fatalf("%s: %+v, %v; want state %v", c.name, j, err, c.state)
		}
	}
	st, err := p.TopicStats(ctx, "u")
	if err != nil || st.Ready != 2 || st.Delayed != 0 || st.Bytes != 12 {
		t.Fatalf("stats after the updates: ready %d, delayed %d, bytes %d, %v", st.Ready, st.Delayed, st.Bytes, err)
	}
	first := mustPop(t, p, ctx, "u") // b: priority 0 now, before a's 1
	if num(first.ID) != b || first.Body != "bbbbbbbb" {
		t.Fatalf("first pop: %+v", first)
	}
	if _, err := p.UpdateJob(ctx, b, job.Update{Priority: pri(5)}); !errors.As(err, new(*job.StateError)) {
		t.Fatalf("update of a reserved job: %v, want a state error", err)
	}
	if _, err := p.UpdateJob(ctx, num(999999), job.Update{Priority: pri(5)}); !errors.Is(err, job.ErrNotFound) {
		t.Fatalf("update of no job: %v", err)
	}
	if err := p.SetTopicConfig(ctx, "u", job.TopicConfig{"max_item_size": "4"}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpdateJob(ctx, a, job.Update{Body: str("12345")}); !errors.Is(err, job.ErrTooBig) {
		t.Fatalf("a body over max_item_size: %v", err)
	}
	if problems, err := p.Check(ctx); err != nil || len(problems) > 0 {
		t.Fatalf("the store after the updates: %v %v", problems, err)
	}
}

// A job whose time ran out before a sweep found it is expired by an update,
// as by a pop: it is not there to change.
func TestUpdateOfExpiredJob(t *testing.T) {
	p, ctx := newPool(t)
	id := num(mustPush(t, p, ctx, job.Spec{Topic: "xp", Body: "x", TTR: time.Minute, Expires: time.Now().Add(100 * time.Millisecond)}))
	time.Sleep(200 * time.Millisecond)
	pri := uint32(7)
	if _, err := p.UpdateJob(ctx, id, job.Update{Priority: &pri}); !errors.Is(err, job.ErrNotFound) {
		t.Fatalf("update of an expired job: %v, want not found", err)
	}
	st, err := p.TopicStats(ctx, "xp")
	if err != nil || st.Ready != 0 || st.Expired != 1 {
		t.Fatalf("after the update: ready %d, expired %d, %v", st.Ready, st.Expired, err)
	}
}
