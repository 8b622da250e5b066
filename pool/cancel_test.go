package pool

import (
	"errors"
	"testing"
	"time"

	"github.com/gmq/gmq/job"
)

// A waiting job (ready, delayed, buried) ends cancelled at once: kept as a
// completed job would be, or removed with its client id; an ended job
// cannot be cancelled.
func TestCancelAWaitingJob(t *testing.T) {
	p, ctx := newPool(t)
	if err := p.SetTopicConfig(ctx, "kept", job.TopicConfig{"keep_completed": "600"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		spec  job.Spec
		bury  bool
		kept  bool
		state job.State // after the cancel
	}{
		{"ready, kept", job.Spec{Topic: "kept", Body: "x", TTR: time.Minute, ClientID: "c-ready"}, false, true, job.Cancelled},
		{"delayed, not kept", job.Spec{Topic: "plain", Body: "x", TTR: time.Minute, Delay: time.Hour, ClientID: "c-delayed"}, false, false, job.Gone},
		{"buried, kept", job.Spec{Topic: "kept", Body: "x", TTR: time.Minute, ClientID: "c-buried"}, true, true, job.Cancelled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := mustPush(t, p, ctx, tc.spec)
			if tc.bury {
				j := mustPop(t, p, ctx, tc.spec.Topic)
				if _, err := p.Bury(ctx, num(id), j.Attempt(), job.KeepPriority); err != nil {
					t.Fatal(err)
				}
			}
			got, err := p.Cancel(ctx, tc.spec.ClientID)
			if err != nil || got.State != tc.state {
				t.Fatalf("cancel: %+v %v, want %s", got, err, tc.state)
			}
			peeked, err := p.Peek(ctx, tc.spec.ClientID)
			if tc.kept && (err != nil || peeked.State != job.Cancelled || peeked.EndedAt.IsZero()) {
				t.Fatalf("the cancelled job: %+v %v, want it kept, cancelled", peeked, err)
			}
			if !tc.kept && !errors.Is(err, job.ErrNotFound) {
				t.Fatalf("the cancelled job: %+v %v, want it and its client id gone", peeked, err)
			}
			if _, err := p.Cancel(ctx, num(id)); tc.kept && !errors.Is(err, job.ErrNotReserved) {
				t.Fatalf("a second cancel: %v, want a state error", err)
			}
			checkClean(t, p, ctx)
		})
	}
	// max_completed bounds the cancelled jobs kept, as it does the completed.
	if err := p.SetTopicConfig(ctx, "capped", job.TopicConfig{"keep_completed": "600", "max_completed": "2"}); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		id := "capped-" + num(uint64(i))
		mustPush(t, p, ctx, job.Spec{Topic: "capped", Body: "x", TTR: time.Minute, ClientID: id})
		if _, err := p.Cancel(ctx, id); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond) // a later cancel, a later score: Redis's clock is in ms
	}
	if _, total, err := p.ListJobs(ctx, "capped", job.Cancelled, 0, 10); err != nil || total != 2 {
		t.Fatalf("cancelled jobs kept under max_completed 2: %d %v", total, err)
	}
	if _, err := p.Resolve(ctx, "capped-0"); !errors.Is(err, job.ErrNotFound) {
		t.Fatalf("the client id of a cancelled job max_completed dropped: %v, want it gone", err)
	}
	st, err := p.TopicStats(ctx, "kept")
	if err != nil || st.Cancelled != 2 || st.CancelledTotal != 2 || st.Bytes != 0 || st.Ready != 0 || st.Buried != 0 {
		t.Fatalf("topic stats: %+v %v", st, err)
	}
	if n, err := p.Retry(ctx, "kept", job.Cancelled, []string{"c-ready"}); err != nil || n != 1 {
		t.Fatalf("push a cancelled job again: %d %v", n, err)
	}
	if j := mustPop(t, p, ctx, "kept"); j == nil || j.PublicID() != "c-ready" {
		t.Fatalf("pushed again: %+v", j)
	}
	checkClean(t, p, ctx)
}

// A reserved job is marked, and ends cancelled when its consumer next
// touches it, reports progress, acks, releases, buries or fails it (each
// answers ErrCancelled), or when its TTR runs out: it is never completed,
// retried or delivered again.
func TestCancelAHeldJob(t *testing.T) {
	p, ctx := newPool(t)
	if err := p.SetTopicConfig(ctx, "held", job.TopicConfig{"keep_completed": "600"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		next func(id string, attempt int) error // the consumer's next call
	}{
		{"a touch", func(id string, a int) error { _, err := p.Touch(ctx, id, a); return err }},
		{"a progress", func(id string, a int) error { _, err := p.Progress(ctx, id, a, "50", ""); return err }},
		{"an ack", func(id string, a int) error { return p.Ack(ctx, id, a, `"done"`) }},
		{"a release", func(id string, a int) error { _, err := p.Release(ctx, id, a, job.KeepPriority, 0); return err }},
		{"a bury", func(id string, a int) error { _, err := p.Bury(ctx, id, a, job.KeepPriority); return err }},
		{"a fail", func(id string, a int) error { _, err := p.Fail(ctx, id, a, "x"); return err }},
		{"its TTR running out", func(id string, _ int) error {
			for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				if _, _, err := p.Tick(ctx, p.BucketOf("held"), "held"); err != nil {
					return err
				}
				if j, err := p.Peek(ctx, id); err != nil || j.State != job.Reserved {
					return job.ErrCancelled // ended: as the consumer's next call would learn
				}
			}
			return errors.New("still reserved 30 s after its TTR")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ttr := time.Minute
			if tc.name == "its TTR running out" {
				ttr = 100 * time.Millisecond
			}
			id := mustPush(t, p, ctx, job.Spec{Topic: "held", Body: "x", TTR: ttr})
			j := mustPop(t, p, ctx, "held")
			got, err := p.Cancel(ctx, num(id))
			if err != nil || got.State != job.Reserved || !got.Cancelling {
				t.Fatalf("cancel a held job: %+v %v, want it reserved, cancelling", got, err)
			}
			if err := tc.next(num(id), j.Attempt()); !errors.Is(err, job.ErrCancelled) {
				t.Fatalf("the consumer's next call: %v, want ErrCancelled", err)
			}
			if ended, err := p.Peek(ctx, num(id)); err != nil || ended.State != job.Cancelled || ended.Result != "" {
				t.Fatalf("after: %+v %v, want it cancelled", ended, err)
			}
			if err := p.Ack(ctx, num(id), j.Attempt(), ""); !errors.Is(err, job.ErrCancelled) {
				t.Fatalf("an ack after: %v, want ErrCancelled", err)
			}
			if _, err := p.Touch(ctx, num(id), j.Attempt()); !errors.Is(err, job.ErrCancelled) {
				t.Fatalf("a touch after: %v, want ErrCancelled (its consumer may not have heard)", err)
			}
			if j := mustPop(t, p, ctx, "held"); j != nil {
				t.Fatalf("popped %+v after the cancel", j)
			}
			checkClean(t, p, ctx)
		})
	}
}

// A consumer's progress: its value, a log capped at max_log lines (the
// oldest dropped, each line cut to 1 KiB), a fresh TTR; a progress over
// max_result is refused, the job untouched.
func TestProgress(t *testing.T) {
	p, ctx := newPool(t)
	if err := p.SetTopicConfig(ctx, "long", job.TopicConfig{"max_log": "2", "max_result": "20"}); err != nil {
		t.Fatal(err)
	}
	id := mustPush(t, p, ctx, job.Spec{Topic: "long", Body: "x", TTR: time.Minute})
	j := mustPop(t, p, ctx, "long")
	for i, line := range []string{"page 1 of 3", "page 2 of 3", string(make([]byte, 2000))} {
		got, err := p.Progress(ctx, num(id), j.Attempt(), `{"page":`+string(rune('1'+i))+`}`, line)
		if err != nil || !got.Due.Equal(got.Now.Add(got.TTR)) {
			t.Fatalf("progress %d: %+v %v, want a fresh TTR", i, got, err)
		}
	}
	got, err := p.Peek(ctx, num(id))
	if err != nil || got.Progress != `{"page":3}` || len(got.Log) != 2 || got.Log[0].Line != "page 2 of 3" ||
		len(got.Log[1].Line) != 1024 || got.Log[0].At.IsZero() {
		t.Fatalf("the job: progress %q, log %+v (%v)", got.Progress, got.Log, err)
	}
	if _, err := p.Progress(ctx, num(id), j.Attempt(), `"more than twenty bytes of progress"`, ""); !errors.Is(err, job.ErrTooBig) {
		t.Fatalf("a progress over max_result: %v", err)
	}
	if _, err := p.Progress(ctx, num(id), j.Attempt()+1, "", "x"); !errors.As(err, new(*job.StaleError)) {
		t.Fatalf("another delivery's progress: %v, want stale", err)
	}
	checkClean(t, p, ctx)
}
