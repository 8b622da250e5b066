package pool

import (
	"context"
	"testing"
	"time"

	"github.com/gmq/gmq/job"
)

// A job a broker waits for (MarkEndWait) has its end announced on the
// wake channel, once, however it ends; a job no one waits for announces
// nothing.
func TestJobEndsAreAnnounced(t *testing.T) {
	p, ctx := newPool(t)
	if err := p.SetTopicConfig(ctx, "kept", job.TopicConfig{"keep_completed": "60", "max_attempts": "1"}); err != nil {
		t.Fatal(err)
	}
	heard := make(chan Wake, 16)
	subCtx, stop := context.WithCancel(ctx)
	defer stop()
	subscribed := make(chan struct{}, 1)
	go func() {
		_ = p.Subscribe(subCtx, func() { subscribed <- struct{}{} }, func(w Wake) {
			if w.Ended != 0 {
				heard <- w
			}
		})
	}()
	<-subscribed
	popped := func(topic string) *job.Job {
		t.Helper()
		j := mustPop(t, p, ctx, topic)
		if j == nil {
			t.Fatalf("nothing to pop from %s", topic)
		}
		return j
	}
	for _, tc := range []struct {
		name  string
		spec  job.Spec
		end   func(id uint64)
		want  string
		state job.State // the job as MarkEndWait found it
	}{
		{"an ack where it is kept", job.Spec{Topic: "kept", Body: "x", TTR: time.Minute}, func(id uint64) {
			if err := p.Ack(ctx, num(id), popped("kept").Attempt(), `"r"`); err != nil {
				t.Fatal(err)
			}
		}, "completed", job.Ready},
		{"an ack where it is not", job.Spec{Topic: "plain", Body: "x", TTR: time.Minute}, func(id uint64) {
			if err := p.Ack(ctx, num(id), popped("plain").Attempt(), ""); err != nil {
				t.Fatal(err)
			}
		}, "acked", job.Ready},
		{"a delete", job.Spec{Topic: "plain", Body: "x", TTR: time.Minute, Delay: time.Hour}, func(id uint64) {
			if err := p.Delete(ctx, num(id), 0); err != nil {
				t.Fatal(err)
			}
		}, "deleted", job.Delayed},
		{"a failure past max_attempts", job.Spec{Topic: "kept", Body: "x", TTR: time.Minute}, func(id uint64) {
			if _, err := p.Fail(ctx, num(id), popped("kept").Attempt(), "no"); err != nil {
				t.Fatal(err)
			}
		}, "dead", job.Ready},
		{"a pop with a TTR of 0", job.Spec{Topic: "fire", Body: "x"}, func(uint64) { popped("fire") }, "taken", job.Ready},
		{"a purge", job.Spec{Topic: "plain", Body: "x", TTR: time.Minute}, func(uint64) {
			if _, err := p.Purge(ctx, "plain", job.Ready); err != nil {
				t.Fatal(err)
			}
		}, "deleted", job.Ready},
	} {
		t.Run(tc.name, func(t *testing.T) {
			unwatched := mustPush(t, p, ctx, tc.spec) // ends first, unannounced
			id := mustPush(t, p, ctx, tc.spec)
			got, err := p.MarkEndWait(ctx, id)
			if err != nil || got.State != tc.state {
				t.Fatalf("mark: %+v %v, want the job %s", got, err, tc.state)
			}
			tc.end(unwatched)
			tc.end(id)
			select {
			case w := <-heard:
				if w.Ended != id || w.How != tc.want {
					t.Fatalf("heard %+v, want job %d %s", w, id, tc.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("no end announced within 10 s")
			}
			select {
			case w := <-heard:
				t.Fatalf("heard %+v as well: once a job, and only the job waited for", w)
			case <-time.After(50 * time.Millisecond): // a bound for a message already sent, not a wait for one
			}
		})
	}
	// A job that ended is returned as it is; one gone, not found.
	id := mustPush(t, p, ctx, job.Spec{Topic: "kept", Body: "x", TTR: time.Minute})
	if err := p.Ack(ctx, num(id), popped("kept").Attempt(), ""); err != nil {
		t.Fatal(err)
	}
	if got, err := p.MarkEndWait(ctx, id); err != nil || got.State != job.Completed {
		t.Fatalf("mark a completed job: %+v %v", got, err)
	}
	if _, err := p.MarkEndWait(ctx, 999999999); err == nil {
		t.Fatal("mark a job that is not there: no error")
	}
	checkClean(t, p, ctx)
}
