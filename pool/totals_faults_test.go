package pool

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/gmq/gmq/job"
)

// otherPool is a second broker on the test Redis, to read what is written.
func otherPool(t *testing.T) (*Pool, context.Context) {
	return openPool(t, rueidis.ClientOption{InitAddress: []string{redis.Addr}}, Options{})
}

func popAckFor(t *testing.T, p *Pool, ctx context.Context, topic string) {
	t.Helper()
	got := mustPop(t, p, ctx, topic)
	if got == nil {
		t.Fatalf("pop %s: none", topic)
	}
	if err := p.Ack(ctx, strconv.FormatUint(got.ID, 10), got.Attempt(), ""); err != nil {
		t.Fatal(err)
	}
}

// A topic deleted (or forgotten) and used again before the write starts
// from nothing: its old pending totals went with it (they landed on the new
// topic before totals.forget).
func TestTotalsTopicUsedAgain(t *testing.T) {
	for _, how := range []string{"forget", "delete"} {
		t.Run(how, func(t *testing.T) {
			p, ctx := newPool(t)
			other, _ := otherPool(t)
			spec := job.Spec{Topic: "again", Body: "x", TTR: time.Minute, Priority: job.DefaultPriority}
			for range 3 {
				mustPush(t, p, ctx, spec)
				popAckFor(t, p, ctx, spec.Topic)
			}
			if err := p.FlushTotals(ctx); err != nil { // three lives written
				t.Fatal(err)
			}
			// 2 more, pending.
			for range 2 {
				mustPush(t, p, ctx, spec)
				popAckFor(t, p, ctx, spec.Topic)
			}
			switch how {
			case "forget":
				if ok, err := p.ForgetTopic(ctx, spec.Topic); err != nil || !ok {
					t.Fatalf("forget: %v %v", ok, err)
				}
			case "delete":
				if _, err := p.DeleteTopic(ctx, spec.Topic); err != nil {
					t.Fatal(err)
				}
			}
			mustPush(t, p, ctx, spec) // the topic anew: 1 job, none reserved or deleted
			ts, err := p.TopicStats(ctx, spec.Topic)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("this broker before the write: jobs %d reserves %d deletes %d", ts.Jobs, ts.Reserves, ts.Deletes)
			if err := p.FlushTotals(ctx); err != nil {
				t.Fatal(err)
			}
			ts, err = other.TopicStats(ctx, spec.Topic)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("another broker after the write: jobs %d reserves %d deletes %d", ts.Jobs, ts.Reserves, ts.Deletes)
			if ts.Jobs != 1 || ts.Reserves != 0 || ts.Deletes != 0 {
				t.Errorf("the topic used again after %s: jobs %d reserves %d deletes %d; want 1 0 0 (as before 89031be)",
					how, ts.Jobs, ts.Reserves, ts.Deletes)
			}
		})
	}
}

// A write whose reply is lost (its context ends while Redis holds the call)
// is tried again as it was, and add_totals.lua skips it as written: counted
// once (twice before writes were numbered).
func TestTotalsFlushReplyLost(t *testing.T) {
	p, ctx := newPool(t)
	other, _ := otherPool(t)
	spec := job.Spec{Topic: "lost", Body: "x", TTR: time.Minute, Priority: job.DefaultPriority}
	mustPush(t, p, ctx, spec)
	if r, err := redis.Do("CLIENT", "PAUSE", "1000", "WRITE"); err != nil || r != "+OK" {
		t.Fatalf("pause: %q %v", r, err)
	}
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	err := p.FlushTotals(short)
	cancel()
	t.Logf("flush while Redis held it: %v", err)
	writtenJobs(t, other, ctx, 1) // the write Redis held landed, its answer lost
	if err := p.FlushTotals(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := other.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mine, err := p.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.Jobs != 1 || mine.Jobs != 1 {
		t.Errorf("one push: total_jobs %d (another broker), %d (this one); want 1", got.Jobs, mine.Jobs)
	}
}

// Redis wiped while totals are pending: Init, as after a data loss, drops
// them, so none land on the store made anew.
func TestTotalsAcrossWipe(t *testing.T) {
	p, ctx := newPool(t)
	other, _ := otherPool(t)
	spec := job.Spec{Topic: "wiped", Body: "x", TTR: time.Minute, Priority: job.DefaultPriority}
	for range 3 {
		mustPush(t, p, ctx, spec)
		popAckFor(t, p, ctx, spec.Topic)
	}
	redis.Flush(t)
	if err := p.Init(ctx); err != nil { // as checkStore does
		t.Fatal(err)
	}
	mustPush(t, p, ctx, spec)
	if err := p.FlushTotals(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := other.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := other.TopicStats(ctx, spec.Topic)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("after the wipe and one push: server jobs %d reserves %d deletes %d; topic jobs %d reserves %d deletes %d",
		got.Jobs, got.Reserves, got.Deletes, ts.Jobs, ts.Reserves, ts.Deletes)
	if got.Jobs != 1 || got.Reserves != 0 || got.Deletes != 0 || ts.Reserves != 0 || ts.Deletes != 0 {
		t.Errorf("totals from before the wipe written into the store made anew")
	}
}

// A write to a frozen Redis with the dispatcher's context (no deadline),
// totals pending in 4 buckets, holds the lock for one bound, all buckets at
// once (22-27 s, one after another, before).
func TestTotalsFrozenFlushDuration(t *testing.T) {
	p, ctx := newPool(t)
	for i := range 12 {
		mustPush(t, p, ctx, job.Spec{Topic: "fz" + strconv.Itoa(i), Body: "x", TTR: time.Minute, Priority: job.DefaultPriority})
	}
	thaw, err := redis.Freeze()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = thaw() }()
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- p.FlushTotals(context.Background()) }()
	flushHolds(t, p)
	statsDone := make(chan time.Duration, 1)
	go func() {
		s := time.Now()
		short, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, _ = p.Stats(short)
		statsDone <- time.Since(s)
	}()
	select {
	case err := <-done:
		t.Logf("flush with Redis frozen returned after %v: %v", time.Since(start), err)
	case <-time.After(60 * time.Second):
		t.Logf("flush with Redis frozen still running after 60s")
	}
	select {
	case d := <-statsDone:
		t.Logf("Stats (1s deadline) returned after %v", d)
		if d > 2*time.Second {
			t.Errorf("Stats with a 1s deadline took %v: it waited on the totals' lock, held by a write to a frozen Redis", d)
		}
	case <-time.After(3 * time.Second):
		t.Errorf("Stats (1s deadline) still blocked %v after the write started", time.Since(start))
	}
}

// The dispatcher's own write across a Redis stall longer than its bound:
// it fails on the client side, Redis runs it when it resumes, and its retry
// is skipped as written.
func TestTotalsStallDoubles(t *testing.T) {
	p, ctx := newPool(t)
	other, _ := otherPool(t)
	warmTotals(t, p, ctx, "stall")
	thaw, err := redis.Freeze()
	if err != nil {
		t.Fatal(err)
	}
	err = p.FlushTotals(context.Background())
	t.Logf("flush across the stall: %v", err)
	if err := thaw(); err != nil {
		t.Fatal(err)
	}
	writtenJobs(t, other, ctx, 2) // the stalled write landed after the thaw
	if err := p.FlushTotals(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := other.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.Jobs != 2 {
		t.Errorf("two pushes, after a stall: total_jobs %d, want 2", got.Jobs)
	}
}

// The dispatcher's stop, as Run does it: its context is cancelled while a
// periodic write is in flight (here held by a slow Redis), then Run's last
// write retries it, skipped as written.
func TestTotalsStopDuringFlush(t *testing.T) {
	p, ctx := newPool(t)
	other, _ := otherPool(t)
	warmTotals(t, p, ctx, "stop")
	if r, err := redis.Do("CLIENT", "PAUSE", "300", "WRITE"); err != nil || r != "+OK" {
		t.Fatalf("pause: %q %v", r, err)
	}
	run, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.FlushTotals(run) }() // every(ctx, totalsEvery, d.flushTotals)
	flushHolds(t, p)                           // the write is in flight, held by the pause
	stop()                                     // stopDispatcher
	t.Logf("periodic write: %v", <-done)
	// A write blocks until the pause ends: then the held write, if it was
	// sent before the stop, has run.
	if _, err := redis.Do("SET", "gmq-test-unpaused", "1"); err != nil {
		t.Fatal(err)
	}
	if s, err := other.Stats(ctx); err == nil {
		t.Logf("after the pause, before the last write: total_jobs %d", s.Jobs)
	}
	last, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	t.Logf("last write: %v", p.FlushTotals(last))
	got, err := other.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.Jobs != 2 {
		t.Errorf("two pushes, stopped during a write: total_jobs %d, want 2", got.Jobs)
	}
}

// warmTotals has Redis know add_totals.lua (any broker that ran a second
// has written it: else a stalled call is an EVALSHA answered NOSCRIPT,
// never run), then pushes one job to topic, whose total is left to write.
func warmTotals(t *testing.T, p *Pool, ctx context.Context, topic string) {
	t.Helper()
	mustPush(t, p, ctx, job.Spec{Topic: "warm", Body: "x", TTR: time.Minute, Priority: job.DefaultPriority})
	if err := p.FlushTotals(ctx); err != nil {
		t.Fatal(err)
	}
	mustPush(t, p, ctx, job.Spec{Topic: topic, Body: "x", TTR: time.Minute, Priority: job.DefaultPriority})
}

// writtenJobs waits until another broker reads total_jobs n: a write Redis
// held has landed. Its deadline is only for what never happens.
func writtenJobs(t *testing.T, other *Pool, ctx context.Context, n int64) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if s, err := other.Stats(ctx); err == nil && s.Jobs == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("total_jobs never %d in Redis: the held write did not land", n)
		}
	}
}

// flushHolds waits until a flush holds the totals' lock (Redis frozen, it
// holds it for its whole bound).
func flushHolds(t *testing.T, p *Pool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); p.totals.flushing.TryRLock(); time.Sleep(time.Millisecond) {
		p.totals.flushing.RUnlock()
		if time.Now().After(deadline) {
			t.Fatal("no flush took the totals' lock")
		}
	}
}
