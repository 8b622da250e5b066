package pool

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/gmq/gmq/job"
)

// checkClean fails the test if pool.Check finds a job in other than one state.
func checkClean(t *testing.T, p *Pool, ctx context.Context) {
	t.Helper()
	if problems, err := p.Check(ctx); err != nil || len(problems) > 0 {
		t.Fatalf("check: %v %v", problems, err)
	}
}

func TestExpiredJobsAreNeverPopped(t *testing.T) {
	p, ctx := newPool(t)
	// The pushes and the first pop must come before soon: a second is the
	// margin for a loaded machine (they take milliseconds). The delayed job
	// is due long after, so it is still delayed when it expires.
	soon := time.Now().Add(time.Second)
	mustPush(t, p, ctx, job.Spec{Topic: "e", Body: "gone", Expires: soon})
	mustPush(t, p, ctx, job.Spec{Topic: "e", Body: "gone too", Expires: soon, ClientID: "exp-1"})
	mustPush(t, p, ctx, job.Spec{Topic: "e", Body: "late", Expires: soon, Delay: time.Minute})
	keep := mustPush(t, p, ctx, job.Spec{Topic: "e", Body: "stays", TTR: time.Minute})
	held := mustPush(t, p, ctx, job.Spec{Topic: "held", Body: "held", TTR: time.Minute, Expires: soon})
	if j := mustPop(t, p, ctx, "held"); j == nil || j.ID != held || j.Expires.IsZero() {
		t.Fatalf("pop before expiry: %+v", j)
	}
	time.Sleep(time.Until(soon) + 20*time.Millisecond) // past soon: a lower bound, which load only lengthens

	if j := mustPop(t, p, ctx, "e"); j == nil || j.ID != keep {
		t.Fatalf("pop after expiry: %+v, want the job that does not expire", j)
	}
	if j := mustPop(t, p, ctx, "e"); j != nil {
		t.Fatalf("an expired job was popped: %+v", j)
	}
	st, err := p.TopicStats(ctx, "e")
	if err != nil || st.Expired != 3 || st.Delayed != 0 || st.Ready != 0 {
		t.Fatalf("stats: %+v %v, want 3 expired (the delayed one too)", st, err)
	}
	if _, err := p.Resolve(ctx, "exp-1"); !errors.Is(err, job.ErrNotFound) {
		t.Fatalf("an expired job's client id still resolves: %v", err)
	}
	// A reserved job does not expire under its consumer; released, it does.
	if n, err := p.FlushExpired(ctx, "held"); err != nil || n != 0 {
		t.Fatalf("flush_expired expired %d reserved jobs %v", n, err)
	}
	if _, err := p.Release(ctx, job.PublicID("", held), 0, job.KeepPriority, 0); err != nil {
		t.Fatalf("release of a reserved job past its expiry: %v", err)
	}
	if j := mustPop(t, p, ctx, "held"); j != nil {
		t.Fatalf("a released job past its expiry was popped: %+v", j)
	}
	c, err := p.Stats(ctx)
	if err != nil || c.Expired != 4 {
		t.Fatalf("counters %+v %v, want 4 expired", c, err)
	}
	checkClean(t, p, ctx)
}

func TestMaxAgeAndTimerSweep(t *testing.T) {
	p, ctx := newPool(t)
	if err := p.ApplyTopicConfig(ctx, nil, map[string]job.TopicConfig{"aged": {"max_age": "1"}}); err != nil {
		t.Fatal(err)
	}
	id := mustPush(t, p, ctx, job.Spec{Topic: "aged", Body: "x", Expires: time.Now().Add(time.Hour)})
	j, err := p.Peek(ctx, job.PublicID("", id))
	if err != nil || j.Expires.Sub(j.Created) != time.Second {
		t.Fatalf("max_age 1 s: the job expires %v after its push (%v), want 1s", j.Expires.Sub(j.Created), err)
	}

	// The bucket timer expires an idle topic's jobs: nobody pops it.
	mustPush(t, p, ctx, job.Spec{Topic: "idle", Body: "x", Expires: time.Now().Add(30 * time.Millisecond)})
	b := p.BucketOf("idle")
	time.Sleep(50 * time.Millisecond)
	topics, _, err := p.DueTopics(ctx, b, 10)
	if err != nil || !slices.Contains(topics, "idle") {
		t.Fatalf("due topics %v %v: the timer is not told of the expiry", topics, err)
	}
	if _, more, err := p.Tick(ctx, b, "idle"); err != nil || more {
		t.Fatalf("tick: more %v %v", more, err)
	}
	if st, err := p.TopicStats(ctx, "idle"); err != nil || st.Expired != 1 || st.Ready != 0 {
		t.Fatalf("after the tick: %+v %v", st, err)
	}
	checkClean(t, p, ctx)
}

func TestExpireTo(t *testing.T) {
	p, ctx := newPool(t)
	if err := p.ApplyTopicConfig(ctx, nil, map[string]job.TopicConfig{"src": {"expire_to": "dst", "max_age": "1"}}); err != nil {
		t.Fatal(err)
	}
	mustPush(t, p, ctx, job.Spec{Topic: "src", Body: "moved", Priority: 7, TTR: time.Minute,
		Expires: time.Now().Add(30 * time.Millisecond), ClientID: "mover"})
	time.Sleep(50 * time.Millisecond)
	if n, err := p.FlushExpired(ctx, "src"); err != nil || n != 1 {
		t.Fatalf("flush expired: %d %v", n, err)
	}
	checkClean(t, p, ctx) // the job is in the outbox: one state still
	if j := mustPop(t, p, ctx, "src"); j != nil {
		t.Fatalf("an expired job was popped: %+v", j)
	}
	b := p.BucketOf("src")
	topics, _, err := p.DueTopics(ctx, b, 10)
	if err != nil || !slices.Contains(topics, outboxDue) {
		t.Fatalf("due topics %v %v, want the outbox", topics, err)
	}
	ready, more, err := p.Tick(ctx, b, outboxDue)
	if err != nil || more || ready["dst"] != 1 {
		t.Fatalf("moving the outbox: %v %v %v", ready, more, err)
	}
	j := mustPop(t, p, ctx, "dst")
	if j == nil || j.Body != "moved" || j.Priority != 7 || j.TTR != time.Minute || !j.Expires.IsZero() || j.ClientID != "" {
		t.Fatalf("the moved job: %+v, want a fresh push with no expiry", j)
	}
	if _, err := p.Resolve(ctx, "mover"); !errors.Is(err, job.ErrNotFound) {
		t.Fatalf("the expired job's client id still resolves: %v", err)
	}
	if topics, _, _ := p.DueTopics(ctx, b, 10); slices.Contains(topics, outboxDue) {
		t.Fatalf("the outbox is still due: %v", topics)
	}
	checkClean(t, p, ctx)
}

// An expired job its expire_to topic refuses for good is dropped and
// counted, and leaves the outbox: retrying it would stall the bucket's
// timer behind it (a held unique key once did, for the key's window).
func TestExpireToARefusingTopic(t *testing.T) {
	for _, c := range []struct {
		name  string
		dest  job.TopicConfig
		setup func(p *Pool, ctx context.Context)
	}{
		{"too big", job.TopicConfig{"max_item_size": "1"}, nil},
		{"its body's unique key held", job.TopicConfig{"unique_from": "body"}, func(p *Pool, ctx context.Context) {
			mustPush(t, p, ctx, job.Spec{Topic: "dest", Body: "body"})
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, ctx := newPool(t)
			if err := p.ApplyTopicConfig(ctx, nil, map[string]job.TopicConfig{"src": {"expire_to": "dest"}, "dest": c.dest}); err != nil {
				t.Fatal(err)
			}
			if c.setup != nil {
				c.setup(p, ctx)
			}
			mustPush(t, p, ctx, job.Spec{Topic: "src", Body: "body", Expires: time.Now().Add(20 * time.Millisecond)})
			time.Sleep(40 * time.Millisecond)
			if n, err := p.FlushExpired(ctx, "src"); err != nil || n != 1 {
				t.Fatalf("flush expired: %d %v", n, err)
			}
			if _, more, err := p.Tick(ctx, p.BucketOf("src"), outboxDue); err != nil || more {
				t.Fatalf("moving the outbox: more %v %v", more, err)
			}
			if got := p.RefusedExpired(); got != 1 {
				t.Fatalf("refused expired jobs: %d, want 1", got)
			}
			checkClean(t, p, ctx)
		})
	}
}
