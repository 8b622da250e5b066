package pool

import (
	"errors"
	"testing"
	"time"

	"github.com/gmq/gmq/job"
)

func intp(n int) *int    { return &n }
func boolp(b bool) *bool { return &b }

func TestFailBackoffAndDead(t *testing.T) {
	p, ctx := newPool(t)
	if err := p.SetTopicConfig(ctx, "f", job.TopicConfig{"max_attempts": "3", "backoff": "exponential", "backoff_base": "1"}); err != nil {
		t.Fatal(err)
	}
	mustPush(t, p, ctx, job.Spec{Topic: "f", Body: "x", TTR: time.Minute, ClientID: "poison"})
	id := "poison"
	for failure, wantDelay := range []time.Duration{time.Second, 2 * time.Second} {
		j := mustPop(t, p, ctx, "f")
		got, err := p.Fail(ctx, id, j.Attempt(), "smtp 550")
		if err != nil {
			t.Fatal(err)
		}
		if got.State != job.Delayed || got.Failures != failure+1 || got.LastError != "smtp 550" || got.Due.Sub(got.Now) != wantDelay {
			t.Fatalf("failure %d: %+v, want delayed %v", failure+1, got, wantDelay)
		}
		if _, err := p.Fail(ctx, id, j.Attempt(), "again"); !errors.As(err, new(*job.StaleError)) && !errors.Is(err, job.ErrNotReserved) {
			t.Fatalf("a second fail of the same delivery: %v", err)
		}
		if _, err := p.KickJob(ctx, id); err != nil { // skip the backoff's wait
			t.Fatal(err)
		}
	}
	j := mustPop(t, p, ctx, "f")
	got, err := p.Fail(ctx, id, j.Attempt(), "last straw")
	if err != nil || got.State != job.Dead || got.DeadAt.IsZero() || got.Failures != 3 {
		t.Fatalf("the third failure: %+v %v, want dead", got, err)
	}
	dead, total, err := p.ListJobs(ctx, "f", job.Dead, 0, 10)
	if err != nil || total != 1 || len(dead) != 1 || dead[0].PublicID() != "poison" || dead[0].LastError != "last straw" || dead[0].Body != "x" {
		t.Fatalf("dead list: %+v %d %v", dead, total, err)
	}
	checkClean(t, p, ctx)
	if n, err := p.RetryDead(ctx, "f", []string{"poison"}); err != nil || n != 1 {
		t.Fatalf("retry: %d %v", n, err)
	}
	if j := mustPop(t, p, ctx, "f"); j == nil || j.Failures != 0 {
		t.Fatalf("a retried job: %+v, want ready with its failures forgotten", j)
	}
	st, err := p.TopicStats(ctx, "f")
	if err != nil || st.Failures != 3 || st.DeadTotal != 1 || st.DeadRetried != 1 || st.Dead != 0 {
		t.Fatalf("topic stats: %+v %v", st, err)
	}
	checkClean(t, p, ctx)
}

// A job's own policy wins over its topic's; a TTR that runs out is a
// failure; fixed and linear backoffs; jitter between half and all.
func TestRetryPolicies(t *testing.T) {
	p, ctx := newPool(t)
	own := &job.RetryPolicy{MaxAttempts: intp(1)}
	mustPush(t, p, ctx, job.Spec{Topic: "ttr", Body: "slow", TTR: 30 * time.Millisecond, Retry: own})
	mustPop(t, p, ctx, "ttr")
	time.Sleep(50 * time.Millisecond)
	if _, _, err := p.Tick(ctx, p.BucketOf("ttr"), "ttr"); err != nil {
		t.Fatal(err)
	}
	dead, _, _ := p.ListJobs(ctx, "ttr", job.Dead, 0, 10)
	if len(dead) != 1 || dead[0].LastError != "ttr expired" {
		t.Fatalf("a TTR run out past max_attempts 1: %+v, want dead", dead)
	}

	for _, tc := range []struct {
		policy job.RetryPolicy
		lo, hi time.Duration // the delay after the 3rd failure
	}{
		{job.RetryPolicy{Backoff: "fixed", Base: 500 * time.Millisecond}, 500 * time.Millisecond, 500 * time.Millisecond},
		{job.RetryPolicy{Backoff: "linear", Base: time.Second}, 3 * time.Second, 3 * time.Second},
		{job.RetryPolicy{Backoff: "exponential", Base: time.Second, Max: 3 * time.Second}, 3 * time.Second, 3 * time.Second},
		{job.RetryPolicy{Backoff: "exponential", Base: time.Second, Jitter: boolp(true)}, 2 * time.Second, 4 * time.Second},
		{job.RetryPolicy{Backoff: "exponential", Base: time.Second, Jitter: boolp(true)}, 2 * time.Second, 4 * time.Second},
		{job.RetryPolicy{Backoff: "exponential", Base: time.Second, Jitter: boolp(true)}, 2 * time.Second, 4 * time.Second},
	} {
		id := job.PublicID("", mustPush(t, p, ctx, job.Spec{Topic: "b", Body: "x", TTR: time.Minute, Retry: &tc.policy}))
		var got *job.Job
		for range 3 {
			j := mustPop(t, p, ctx, "b")
			var err error
			if got, err = p.Fail(ctx, id, j.Attempt(), "no"); err != nil {
				t.Fatal(err)
			}
			if _, err := p.KickJob(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
		if d := got.Due.Sub(got.Now); d < tc.lo || d > tc.hi {
			t.Errorf("%+v: the 3rd failure waits %v, want %v..%v", tc.policy, d, tc.lo, tc.hi)
		}
		mustPop(t, p, ctx, "b")
		if err := p.Delete(ctx, id, 0); err != nil {
			t.Fatal(err)
		}
	}
	checkClean(t, p, ctx)
}

// max_dead keeps the newest dead jobs; dead_retention drops old ones.
func TestDeadSetBounds(t *testing.T) {
	p, ctx := newPool(t)
	if err := p.SetTopicConfig(ctx, "d", job.TopicConfig{"max_attempts": "1", "max_dead": "2", "dead_retention": "1"}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		id := job.PublicID("", mustPush(t, p, ctx, job.Spec{Topic: "d", Body: "x", TTR: time.Minute}))
		j := mustPop(t, p, ctx, "d")
		if _, err := p.Fail(ctx, id, j.Attempt(), "no"); err != nil {
			t.Fatal(err)
		}
	}
	if _, total, _ := p.ListJobs(ctx, "d", job.Dead, 0, 10); total != 2 {
		t.Fatalf("max_dead 2 keeps %d", total)
	}
	time.Sleep(1100 * time.Millisecond)
	if _, _, err := p.Tick(ctx, p.BucketOf("d"), "d"); err != nil {
		t.Fatal(err)
	}
	if _, total, _ := p.ListJobs(ctx, "d", job.Dead, 0, 10); total != 0 {
		t.Fatalf("dead_retention 1 s keeps %d after 1.1 s", total)
	}
	if st, _ := p.TopicStats(ctx, "d"); st.DeadDropped != 3 {
		t.Fatalf("dead dropped %d, want 3", st.DeadDropped)
	}
	checkClean(t, p, ctx)
}

// Two brokers failing the same delivery at once: one fail counts, the
// other is refused.
func TestConcurrentFailsCountOnce(t *testing.T) {
	p, ctx := newPool(t)
	other := New(p.client, p.opts)
	for range 20 {
		id := job.PublicID("", mustPush(t, p, ctx, job.Spec{Topic: "c", Body: "x", TTR: time.Minute}))
		j := mustPop(t, p, ctx, "c")
		errs := make(chan error, 2)
		for _, q := range []*Pool{p, other} {
			go func() {
				_, err := q.Fail(ctx, id, j.Attempt(), "both")
				errs <- err
			}()
		}
		ok := 0
		for range 2 {
			if err := <-errs; err == nil {
				ok++
			}
		}
		got, err := p.Peek(ctx, id)
		if ok != 1 || err != nil || got.Failures != 1 {
			t.Fatalf("two fails of one delivery: %d went through, the job has %d failures (%v)", ok, got.Failures, err)
		}
		if err := p.Delete(ctx, id, 0); err != nil {
			t.Fatal(err)
		}
	}
	checkClean(t, p, ctx)
}

// Dead jobs count toward max_items: a topic holds them.
func TestDeadJobsFillATopic(t *testing.T) {
	p, ctx := newPool(t)
	if err := p.SetTopicConfig(ctx, "full", job.TopicConfig{"max_attempts": "1", "max_items": "1"}); err != nil {
		t.Fatal(err)
	}
	id := job.PublicID("", mustPush(t, p, ctx, job.Spec{Topic: "full", Body: "x", TTR: time.Minute}))
	j := mustPop(t, p, ctx, "full")
	if _, err := p.Fail(ctx, id, j.Attempt(), "no"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Push(ctx, job.Spec{Topic: "full", Body: "y"}); !errors.Is(err, job.ErrFull) {
		t.Fatalf("push beside a dead job at max_items 1: %v", err)
	}
}

// The history keeps one sample an interval, whichever broker writes, and
// the newest n.
func TestHistory(t *testing.T) {
	p, ctx := newPool(t)
	other := New(p.client, p.opts)
	for i := range 3 {
		for _, q := range []*Pool{p, other} { // two brokers, each sampling
			// The second broker must write within the interval of the first:
			// half a second is the margin for a loaded machine.
			if _, err := q.AddHistory(ctx, 500*time.Millisecond, 2, map[string]int64{"pushed": int64(i)}); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(550 * time.Millisecond) // past the interval: a lower bound
	}
	got, err := p.History(ctx)
	if err != nil || len(got) != 2 || got[0].Values["pushed"] != 1 || got[1].Values["pushed"] != 2 || !got[0].At.Before(got[1].At) {
		t.Fatalf("history: %+v %v, want the last two samples, one an interval, oldest first", got, err)
	}
}

// A dead job max_dead drops takes its client id with it.
func TestMaxDeadDropsClientIDs(t *testing.T) {
	p, ctx := newPool(t)
	if err := p.SetTopicConfig(ctx, "md", job.TopicConfig{"max_attempts": "1", "max_dead": "1"}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"first", "second"} {
		mustPush(t, p, ctx, job.Spec{Topic: "md", Body: "x", TTR: time.Minute, ClientID: id})
		j := mustPop(t, p, ctx, "md")
		if _, err := p.Fail(ctx, j.PublicID(), j.Attempt(), "no"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.Resolve(ctx, "first"); !errors.Is(err, job.ErrNotFound) {
		t.Fatalf("the dropped dead job's client id still resolves: %v", err)
	}
	if _, err := p.Resolve(ctx, "second"); err != nil {
		t.Fatalf("the kept dead job's client id: %v", err)
	}
	checkClean(t, p, ctx)
}
