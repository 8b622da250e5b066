package pool

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/gmq/gmq/job"
)

// A reserve over a bucket holding 470 or more of its topics and one more
// bucket gives the ready job, as the peeks-then-pop way does. The one call
// (pop_best_plain.lua) copies each bucket's keys with unpack, which Redis's
// Lua refuses past about 8,000 values (12 + 17 a topic): "too many results
// to unpack", an error that is not a refusal, so every such reserve fails.
func TestPopBestPlainManyTopicsInABucket(t *testing.T) {
	for _, n := range []int{469, 470, 1000} {
		p, ctx := newPool(t)
		topics := append(sameBucket(p, 0, n), sameBucket(p, 1, 1)...)
		want := mustPush(t, p, ctx, job.Spec{Topic: topics[len(topics)-1], Body: "x", TTR: time.Minute})
		got, err := p.PopBest(ctx, topics)
		if err != nil || got.Job == nil || got.Job.ID != want {
			t.Errorf("%d topics of bucket 0 and one of bucket 1: %+v, %v; want job %d", n, got.Job, err, want)
		}
	}
}

// A reserve over several buckets whose deadline passes while Redis is
// frozen leaves its job ready once Redis runs again, as the peeks-then-pop
// way does (its peeks time out and the pop is never sent). The one call is
// queued in Redis and runs after the caller gave up: its job stays
// reserved by nobody until its TTR.
func TestPopBestPlainStallLeavesJobReady(t *testing.T) {
	p, ctx := newPool(t)
	a, b := sameBucket(p, 0, 1)[0], sameBucket(p, 1, 1)[0]
	id := mustPush(t, p, ctx, job.Spec{Topic: b, Body: "x", TTR: time.Hour})
	thaw, err := redis.Freeze()
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, popErr := p.PopBest(short, []string{a, b})
	cancel()
	if err := thaw(); err != nil {
		t.Fatal(err)
	}
	if popErr == nil {
		t.Fatal("the reserve answered while Redis was frozen")
	}
	// A PING through the pool's connection comes back only after Redis has
	// run every call queued on it before, the reserve's too: a condition,
	// not a time a slow machine could overtake.
	if err := p.client.Do(ctx, p.client.B().Ping().Build()).Error(); err != nil {
		t.Fatal(err)
	}
	j, err := p.Peek(ctx, strconv.FormatUint(id, 10))
	if err != nil || j.State != job.Ready {
		t.Errorf("the reserve failed (%v); its job is then %v (%v), want ready", popErr, j.State, err)
	}
}

// A reserve whose caller has already given up reserves nothing and says
// so, as the peeks-then-pop way does (batch.go run skips an operation
// whose context is done). The one call is made whatever the context.
func TestPopBestPlainCancelledCallerReservesNothing(t *testing.T) {
	p, ctx := newPool(t)
	a, b := sameBucket(p, 0, 1)[0], sameBucket(p, 1, 1)[0]
	id := mustPush(t, p, ctx, job.Spec{Topic: a, Body: "x", TTR: time.Hour})
	gone, cancel := context.WithCancel(ctx)
	cancel()
	got, err := p.PopBest(gone, []string{a, b})
	j, jerr := p.Peek(ctx, strconv.FormatUint(id, 10))
	if err == nil || got.Job != nil || jerr != nil || j.State != job.Ready {
		t.Errorf("a cancelled caller's reserve: %v, %v; its job then %v (%v), want an error and the job ready", got.Job != nil, err, j.State, jerr)
	}
}
