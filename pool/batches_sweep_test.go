package pool

import (
	"errors"
	"testing"
	"time"

	"github.com/gmq/gmq/job"
)

// The sweep drops a member a crash left listed but never pushed (its batch
// then finishes), marks one that was pushed stored, and removes a
// finished batch past its retention.
func TestBatchSweep(t *testing.T) {
	p, ctx := newPoolWith(t, Options{BatchRetention: time.Millisecond})
	id, ids := batchOf(t, p, ctx, job.BatchSpec{Jobs: []job.Spec{{Topic: "bw-a", Body: "1", TTR: time.Minute}},
		OnComplete: &job.Spec{Topic: "bw-complete", Body: "cb", TTR: time.Minute}})
	// A second member listed, as a create that crashed before its push
	// would leave it, its deadline past.
	lost := member(ids[0] + uint64(p.opts.Buckets))
	if _, err := p.batchCall(ctx, id, "add", []string{"deadline", "1", "max", "100"}, lost); err != nil {
		t.Fatal(err)
	}
	if _, err := p.batchCall(ctx, id, "add", []string{"deadline", "1", "max", "100"}, member(ids[0])); err != nil { // listed again, unstored: it is there
		t.Fatal(err)
	}
	popAck(t, p, ctx, "bw-a", ids[0], "")
	tellAll(t, p, ctx)
	if b := batchNow(t, p, ctx, id); b.State != job.BatchClosed || b.Pending != 1 {
		t.Fatalf("a batch with a lost member: %+v", b)
	}
	b := p.batchBucket(id)
	waitFor(t, "the sweep drops the lost member", func() bool {
		if _, _, err := p.Tick(ctx, b, batchesDue); err != nil {
			t.Fatal(err)
		}
		bt, err := p.Batch(ctx, id)
		return err == nil && bt.State == job.BatchDone
	})
	tellAll(t, p, ctx)
	callbackBody(t, p, ctx, "bw-complete")
	waitFor(t, "the sweep removes the finished batch", func() bool {
		if _, _, err := p.Tick(ctx, b, batchesDue); err != nil {
			t.Fatal(err)
		}
		_, err := p.Batch(ctx, id)
		return errors.Is(err, job.ErrNotFound)
	})
	checkClean(t, p, ctx)
}

// The sweep marks a member stored when its job is there (a create cut off
// after its push, before its mark). Its call to the script once lacked the
// argument a create's mark carries, and every broker whose sweep met such a
// member panicked (issue 49: both brokers of TestChaosBatchesOnCluster).
func TestBatchSweepMarksAPushedMemberStored(t *testing.T) {
	p, ctx := newPool(t)
	id, ids := batchOf(t, p, ctx, job.BatchSpec{Jobs: []job.Spec{{Topic: "bs-a", Body: "1", TTR: time.Minute}},
		OnComplete: &job.Spec{Topic: "bs-complete", Body: "cb", TTR: time.Minute}})
	// Listed again, unstored, its deadline past, while its job is there.
	if _, err := p.batchCall(ctx, id, "add", []string{"deadline", "1", "max", "100"}, member(ids[0])); err != nil {
		t.Fatal(err)
	}
	b := p.batchBucket(id)
	if _, _, err := p.Tick(ctx, b, batchesDue); err != nil {
		t.Fatalf("the sweep of a pushed member: %v", err)
	}
	if bt := batchNow(t, p, ctx, id); bt.State != job.BatchClosed || bt.Pending != 1 {
		t.Fatalf("after the sweep marked its member stored: %+v", bt)
	}
	popAck(t, p, ctx, "bs-a", ids[0], "")
	tellAll(t, p, ctx)
	callbackBody(t, p, ctx, "bs-complete")
	checkClean(t, p, ctx)
}
