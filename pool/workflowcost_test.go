package pool

import (
	"context"
	"slices"
	"strconv"
	"testing"

	"github.com/gmq/gmq/job"
)

// costBatch is how many jobs a batch of BenchmarkWorkflowCost holds.
const costBatch = 100

// BenchmarkWorkflowCost is what a dependency and a batch cost in Redis's
// own time (measureScripts), a job at a time, beside the same calls for a
// job without them in the same run: a push (one, and 100 at once for the
// batch's create), an ack, and the bucket timer's work that follows an end
// (the notices told), whose calls are counted per job too. docs/
// PERFORMANCE.md has the figures ("Workflows: what a dependency and a
// batch cost"):
//
//	go test -run '^$' -bench WorkflowCost -benchtime 3000x ./pool
func BenchmarkWorkflowCost(b *testing.B) {
	for _, tc := range []struct {
		name  string
		setup func(p *Pool, ctx context.Context, n int) []uint64
		run   func(p *Pool, ctx context.Context, ids []uint64, i int) error
	}{
		{"push/plain", nil, pushOne},
		// A push that waits for one job (its register call in the
		// dependency's bucket included).
		{"push/after", costJobs, pushAfter},
		{"ack/plain", reservedJobs, ackOne},
		// An ack of a job another waits for: its notice to the timer.
		{"ack/dependency", withDependents, ackOne},
		// The timer's tell of those notices: the dependent made ready.
		{"tell/dependency", acked(withDependents), tellAllOnce},
		// 100 jobs pushed at once, plainly and as a batch's create (a
		// job's share of it: its listing, its push, its mark as stored).
		{"push/n100", nil, pushHundred},
		{"push/batch", nil, createHundred},
		// An ack of a batch's job (its notice), and the timer's tell
		// (the batch's count; its callback pushed at its last).
		{"ack/batch", batchedJobs, ackOne},
		{"tell/batch", acked(batchedJobs), tellAllOnce},
	} {
		b.Run(tc.name, func(b *testing.B) { measureScripts(b, tc.setup, tc.run) })
	}
}

// pushAfter pushes costJob waiting for job ids[i].
func pushAfter(p *Pool, ctx context.Context, ids []uint64, i int) error {
	j := costJob
	j.After = []string{strconv.FormatUint(ids[i], 10)}
	_, err := p.Push(ctx, j)
	return err
}

// withDependents pushes n jobs to topic t and pops them, and a job of
// topic w waiting for each; it returns the popped jobs' ids.
func withDependents(p *Pool, ctx context.Context, n int) []uint64 {
	ids := reservedJobs(p, ctx, n)
	for i := range ids {
		if err := pushAfter(p, ctx, ids, i); err != nil {
			panic(err)
		}
	}
	return ids
}

// acked is setup, then an ack of every job it returned (popped, attempt
// 1): the ends whose notices the timer tells.
func acked(setup func(p *Pool, ctx context.Context, n int) []uint64) func(p *Pool, ctx context.Context, n int) []uint64 {
	return func(p *Pool, ctx context.Context, n int) []uint64 {
		ids := setup(p, ctx, n)
		for i := range ids {
			if err := ackOne(p, ctx, ids, i); err != nil {
				panic(err)
			}
		}
		return nil
	}
}

// tellAllOnce does, at the first op, every bucket's follow-up rounds until
// none is left (the timer's work after the ends): the benchmark's ops
// share it.
func tellAllOnce(p *Pool, ctx context.Context, _ []uint64, i int) error {
	if i > 0 {
		return nil
	}
	for b := range p.opts.Buckets {
		for {
			_, more, err := p.Tick(ctx, b, followupsDue)
			if err != nil {
				return err
			}
			if !more {
				break
			}
		}
	}
	return nil
}

// pushHundred pushes, at every 100th op, the next 100 jobs at once.
func pushHundred(p *Pool, ctx context.Context, _ []uint64, i int) error {
	if i%costBatch != 0 {
		return nil
	}
	_, errs := p.PushBatch(ctx, slices.Repeat([]job.Spec{costJob}, costBatch))
	return errs[0]
}

// createHundred creates, at every 100th op, a batch of the next 100 jobs
// with an on_complete callback.
func createHundred(p *Pool, ctx context.Context, _ []uint64, i int) error {
	if i%costBatch != 0 {
		return nil
	}
	_, _, err := p.CreateBatch(ctx, costBatchSpec())
	return err
}

func costBatchSpec() job.BatchSpec {
	done := costJob
	done.Topic = "t-done"
	return job.BatchSpec{Jobs: slices.Repeat([]job.Spec{costJob}, costBatch), OnComplete: &done}
}

// batchedJobs creates batches of 100 jobs of topic t, n jobs in all (a
// round up), and pops them; it returns their ids.
func batchedJobs(p *Pool, ctx context.Context, n int) []uint64 {
	var ids []uint64
	for len(ids) < n {
		_, got, err := p.CreateBatch(ctx, costBatchSpec())
		if err != nil {
			panic(err)
		}
		for _, g := range got {
			ids = append(ids, g.ID)
		}
	}
	for range ids {
		if _, err := p.Pop(ctx, []string{"t"}); err != nil {
			panic(err)
		}
	}
	return ids
}
