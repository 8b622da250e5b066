package pool

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gmq/gmq/job"
)

func TestPurgeAndDeleteTopic(t *testing.T) {
	p, ctx := newPool(t)
	const ready = purgeStep + 7 // more than one step
	for i := range ready {
		mustPush(t, p, ctx, job.Spec{Topic: "f", Body: "x", TTR: time.Minute, ClientID: fmt.Sprintf("c-%d", i)})
	}
	mustPush(t, p, ctx, job.Spec{Topic: "f", Body: "later", Delay: time.Hour})
	reserved := mustPop(t, p, ctx, "f")
	buried := mustPop(t, p, ctx, "f")
	if _, err := p.Bury(ctx, buried.PublicID(), 0, 1); err != nil {
		t.Fatal(err)
	}
	mustPush(t, p, ctx, job.Spec{Topic: "other", Body: "stays"})

	n, err := p.Purge(ctx, "f", job.Ready, job.Delayed)
	if err != nil || n != ready-2+1 {
		t.Fatalf("purge ready and delayed: %d %v, want %d", n, err, ready-2+1)
	}
	st, err := p.TopicStats(ctx, "f")
	if err != nil || st.Ready != 0 || st.Delayed != 0 || st.Reserved != 1 || st.Buried != 1 {
		t.Fatalf("after the purge: %+v %v", st, err)
	}
	if _, err := p.Resolve(ctx, "c-500"); !errors.Is(err, job.ErrNotFound) {
		t.Fatalf("a purged job's client id still resolves: %v", err)
	}
	if problems, err := p.Check(ctx); err != nil || len(problems) > 0 {
		t.Fatalf("check after the purge: %v %v", problems, err)
	}
	if _, err := p.Pause(ctx, "f", time.Hour, false); err != nil {
		t.Fatal(err)
	}
	if n, err := p.DeleteTopic(ctx, "f"); err != nil || n != 2 {
		t.Fatalf("delete topic: %d %v, want the reserved and the buried job", n, err)
	}
	if err := p.Delete(ctx, reserved.PublicID(), reserved.Attempt()); !errors.Is(err, job.ErrNotFound) {
		t.Fatalf("ack of a job whose topic was deleted: %v", err)
	}
	if _, err := p.TopicStats(ctx, "f"); !errors.Is(err, job.ErrNotFound) {
		t.Fatalf("a deleted (even paused) topic is still known: %v", err)
	}
	if got := mustPop(t, p, ctx, "other"); got.Body != "stays" {
		t.Fatalf("another topic lost its job: %+v", got)
	}
	if problems, err := p.Check(ctx); err != nil || len(problems) > 0 {
		t.Fatalf("check after the delete: %v %v", problems, err)
	}
	if _, err := p.Purge(ctx, "f", job.Gone); !errors.Is(err, job.ErrInvalid) {
		t.Fatalf("purge of state gone: %v", err)
	}
}
