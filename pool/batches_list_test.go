package pool

import (
	"errors"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/gmq/gmq/job"
)

// Batches lists the batches of every bucket newest first, a page at a
// time, counts them all, and refuses a page past its depth.
func TestListBatches(t *testing.T) {
	p, ctx := newPool(t)
	if list, total, err := p.Batches(ctx, 0, 10); err != nil || len(list) != 0 || total != 0 {
		t.Fatalf("no batches: %v %d %v", list, total, err)
	}
	var made []uint64 // in the order made: the list is its reverse (one creation time: by id, which grows)
	for i := range 7 {
		id, _ := batchOf(t, p, ctx, job.BatchSpec{Jobs: []job.Spec{{Topic: "bl-a", Body: "x", TTR: time.Minute}}, Open: i%2 == 0})
		made = append(made, id)
	}
	buckets := map[int]bool{}
	for _, id := range made {
		buckets[p.batchBucket(id)] = true
	}
	if len(buckets) < 2 {
		t.Fatalf("the batches all went to one bucket (%v): the merge is not tested", buckets)
	}
	var got []uint64
	for offset := 0; ; offset += 3 {
		list, total, err := p.Batches(ctx, offset, 3)
		if err != nil || total != 7 {
			t.Fatalf("page at %d: %d of %d, %v", offset, len(list), total, err)
		}
		if len(list) == 0 {
			break
		}
		for _, b := range list {
			got = append(got, b.ID)
			if b.Total != 1 || b.Pending != 1 || (b.State != job.BatchOpen && b.State != job.BatchClosed) || b.DeadMembers != nil {
				t.Fatalf("a listed batch: %+v", b)
			}
		}
	}
	if len(got) != len(made) {
		t.Fatalf("listed %v, made %v", got, made)
	}
	for i, id := range got {
		if want := made[len(made)-1-i]; id != want {
			t.Fatalf("listed %v, want the reverse of %v", got, made)
		}
	}
	for _, bad := range [][2]int{{-1, 5}, {0, 0}, {MaxBatchesListed, 1}, {math.MaxInt, 1}, {math.MaxInt - 5, 1000}, {1, math.MaxInt}} {
		if _, _, err := p.Batches(ctx, bad[0], bad[1]); !errors.Is(err, job.ErrInvalid) {
			t.Errorf("offset %d, limit %d: %v, want ErrInvalid", bad[0], bad[1], err)
		}
	}
}

// A batch's callbacks are pushed in the round that tells its last end,
// from the bucket of the job that ended, whichever bucket the batch is
// in; and at once by a close that finishes a batch.
func TestBatchCallbacksPushedAtOnce(t *testing.T) {
	p, ctx := newPool(t)
	for range 4 { // batches in several buckets, told from their jobs' buckets
		id, ids := batchOf(t, p, ctx, job.BatchSpec{Jobs: []job.Spec{{Topic: "bn-a", Body: "1", TTR: time.Minute}},
			OnComplete: &job.Spec{Topic: "bn-done", Body: "cb", TTR: time.Minute}})
		popAck(t, p, ctx, "bn-a", ids[0], "")
		pushFollowUps(t, p, ctx, int(ids[0]%uint64(p.opts.Buckets))) // its job's bucket: the notice
		if got := mustPop(t, p, ctx, "bn-done"); got == nil {
			t.Fatalf("batch %d (bucket %d, its job's %d): no callback after the round that told its end",
				id, p.batchBucket(id), ids[0]%uint64(p.opts.Buckets))
		}
	}
	open, _ := batchOf(t, p, ctx, job.BatchSpec{Open: true, OnComplete: &job.Spec{Topic: "bn-done", Body: "cb", TTR: time.Minute}})
	if err := p.CloseBatch(ctx, open); err != nil {
		t.Fatal(err)
	}
	if got := mustPop(t, p, ctx, "bn-done"); got == nil {
		t.Fatal("no callback at once after the close that finished a batch")
	}
	checkClean(t, p, ctx)
}

// Two brokers' timers, nudged at once, take a bucket's follow-ups in
// turn, not the same ones twice: callbacks to a fanout_only topic (pushed
// without their marker, the parent keeping no copy whose number would
// refuse a second push) reach its child once each.
func TestBatchCallbacksToFanoutOnceWithTwoTimers(t *testing.T) {
	p, ctx := newPool(t)
	child := costJob
	child.Topic = "fo-cb+x" // makes fo-cb a fanout parent
	if _, err := p.Push(ctx, child); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Pop(ctx, []string{"fo-cb+x"}); err != nil {
		t.Fatal(err)
	}
	// The parent keeps no copy: a second push is not refused by its number.
	if err := p.SetTopicConfig(ctx, "fo-cb", job.TopicConfig{"fanout_only": "true"}); err != nil {
		t.Fatal(err)
	}
	const n = 200
	for range n {
		_, ids := batchOf(t, p, ctx, job.BatchSpec{Jobs: []job.Spec{{Topic: "fo-a", Body: "1", TTR: time.Minute}},
			OnComplete: &job.Spec{Topic: "fo-cb", Body: "cb", TTR: time.Minute}})
		popAck(t, p, ctx, "fo-a", ids[0], "")
	}
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for b := range p.opts.Buckets {
				for more := true; more; {
					var err error
					if _, more, err = p.Tick(ctx, b, followupsDue); err != nil {
						t.Error(err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	tellAll(t, p, ctx)
	if st, err := p.TopicStats(ctx, "fo-cb+x"); err != nil || st.Jobs != n+1 { // the child had one of its own
		t.Errorf("the fanout child: %d jobs pushed (%v), want %d", st.Jobs, err, n+1)
	}
}
