package pool

import (
	"errors"
	"testing"
	"time"

	"github.com/gmq/gmq/job"
)

// PopBest takes the lowest (priority, id) across topics, whatever their
// order and bucket, as beanstalkd's reserve does.
func TestPopBestAcrossTopics(t *testing.T) {
	p, ctx := newPool(t)
	topics := []string{"a", "b", "c", "d", "e", "f"} // spread over the 4 buckets
	urgent := mustPush(t, p, ctx, job.Spec{Topic: "f", Body: "1", Priority: 1, TTR: time.Minute})
	older := mustPush(t, p, ctx, job.Spec{Topic: "a", Body: "2", Priority: 5, TTR: time.Minute})
	newer := mustPush(t, p, ctx, job.Spec{Topic: "c", Body: "3", Priority: 5, TTR: time.Minute})
	want := []uint64{urgent, older, newer} // priority first, then the lower id
	if _, err := p.Pause(ctx, "b", PauseParams{For: time.Hour}); !errors.Is(err, job.ErrNotFound) {
		t.Fatal("paused an unknown topic without create")
	}
	mustPush(t, p, ctx, job.Spec{Topic: "b", Body: "paused", Priority: 0, TTR: time.Minute})
	if _, err := p.Pause(ctx, "b", PauseParams{For: time.Hour}); err != nil {
		t.Fatal(err)
	}
	for i, id := range want {
		got, err := p.PopBest(ctx, topics)
		if err != nil || got.Job == nil || got.Job.ID != id {
			t.Fatalf("pop %d: %+v %v, want job %d", i, got.Job, err, id)
		}
	}
	got, err := p.PopBest(ctx, topics)
	if err != nil || got.Job != nil || got.PauseWait <= 0 {
		t.Fatalf("with only a paused topic left: %+v %v", got, err)
	}
}

func TestReserveJobAndDeleteUnreserved(t *testing.T) {
	p, ctx := newPool(t)
	delayed := mustPush(t, p, ctx, job.Spec{Topic: "r", Body: "d", Delay: time.Hour, TTR: time.Minute})
	j, err := p.ReserveJob(ctx, num(delayed))
	if err != nil || j.State != job.Reserved || j.Attempt() != 1 {
		t.Fatalf("reserve a delayed job: %+v %v", j, err)
	}
	if _, err := p.ReserveJob(ctx, num(delayed)); !errors.Is(err, job.ErrNotReserved) {
		t.Fatalf("reserve a reserved job: %v", err)
	}
	if err := p.DeleteUnreserved(ctx, num(delayed)); !errors.Is(err, job.ErrNotReserved) {
		t.Fatalf("delete-unreserved of a reserved job: %v", err)
	}
	if _, err := p.Pause(ctx, "fresh", PauseParams{For: time.Second, EvenIfUnknown: true}); err != nil {
		t.Fatalf("pause with create: %v", err)
	}
	if problems, err := p.Check(ctx); err != nil || len(problems) > 0 {
		t.Fatalf("check: %v %v", problems, err)
	}
	if err := p.Delete(ctx, num(delayed), 1); err != nil {
		t.Fatal(err)
	}
}

// AckAndPop acks and pops in one script when the topics share the job's
// bucket, and in two steps when they do not; a failed ack pops nothing.
func TestAckAndPop(t *testing.T) {
	p, ctx := newPool(t)
	first := mustPush(t, p, ctx, job.Spec{Topic: "a", Body: "1", TTR: time.Minute, ClientID: "c-1"})
	second := mustPush(t, p, ctx, job.Spec{Topic: "a", Body: "2", TTR: time.Minute})
	other := "b"
	for p.BucketOf(other) == p.BucketOf("a") {
		other += "b"
	}
	elsewhere := mustPush(t, p, ctx, job.Spec{Topic: other, Body: "3", TTR: time.Minute})
	j := mustPop(t, p, ctx, "a")
	got, err := p.AckAndPop(ctx, num(j.ID), j.Attempt(), "", []string{"a"}) // one script
	if err != nil || got.Job == nil || got.Job.ID != second || j.ID != first {
		t.Fatalf("same bucket: %+v %v", got.Job, err)
	}
	if _, err := p.Resolve(ctx, "c-1"); !errors.Is(err, job.ErrNotFound) {
		t.Fatalf("the acked job's client id still resolves: %v", err)
	}
	got, err = p.AckAndPop(ctx, num(second), 1, "", []string{"a", other}) // two steps
	if err != nil || got.Job == nil || got.Job.ID != elsewhere {
		t.Fatalf("other bucket: %+v %v", got.Job, err)
	}
	if _, err := p.AckAndPop(ctx, num(second), 1, "", []string{other}); !errors.Is(err, job.ErrNotFound) {
		t.Fatalf("ack of a gone job: %v", err)
	}
	got, err = p.AckAndPop(ctx, num(elsewhere), 1, "", []string{other})
	if err != nil || got.Job != nil {
		t.Fatalf("nothing left to pop: %+v %v", got, err)
	}
	if problems, err := p.Check(ctx); err != nil || len(problems) > 0 {
		t.Fatalf("check: %v %v", problems, err)
	}
}

// Take removes the job as it pops it, whatever its TTR, in one script.
func TestTake(t *testing.T) {
	p, ctx := newPool(t)
	mustPush(t, p, ctx, job.Spec{Topic: "k", Body: "x", TTR: time.Minute, ClientID: "take-1"})
	got, err := p.Take(ctx, []string{"k"})
	if err != nil || got.Job == nil || got.Job.State != job.Gone || got.Job.Body != "x" {
		t.Fatalf("take: %+v %v", got.Job, err)
	}
	if _, err := p.Resolve(ctx, "take-1"); !errors.Is(err, job.ErrNotFound) {
		t.Fatalf("a taken job's client id stays: %v", err)
	}
	if st, err := p.TopicStats(ctx, "k"); err != nil || st.Ready+st.Reserved != 0 || st.Bytes != 0 {
		t.Fatalf("after the take: %+v %v", st, err)
	}
	if problems, err := p.Check(ctx); err != nil || len(problems) > 0 {
		t.Fatalf("check: %v %v", problems, err)
	}
}
