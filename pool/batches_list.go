package pool

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/redis/rueidis"

	"github.com/gmq/gmq/job"
)

// MaxBatchesListed is how deep Batches reaches into the newest batches
// (offset plus limit): each bucket lists that many of its own to merge,
// so the cost grows with the depth, not with how many batches are kept.
// Older batches are read by id.
const MaxBatchesListed = 5000

// Batches lists the batches kept (not yet past their retention), newest
// first: limit of them from offset, and how many are kept in all. Every
// bucket keeps its batches in a sorted set by creation time; Batches reads
// the first offset+limit of each (at most MaxBatchesListed), merges them
// and reads the views of those it answers, without their dead jobs'
// errors (Batch has them). A batch removed meanwhile is left out.
func (p *Pool) Batches(ctx context.Context, offset, limit int) ([]job.Batch, int64, error) {
	if offset < 0 || limit < 1 || offset > MaxBatchesListed || limit > MaxBatchesListed || offset+limit > MaxBatchesListed { // no sum that wraps
		return nil, 0, fmt.Errorf("%w: batches are listed to a depth of %d (offset %d, limit %d); read older ones by id",
			job.ErrInvalid, MaxBatchesListed, offset, limit)
	}
	counts := make(rueidis.Commands, 0, p.opts.Buckets)
	for b := range p.opts.Buckets {
		counts = append(counts, p.client.B().Zcard().Key(p.keys.batch(b, 0)[5]).Build())
	}
	var total int64
	for _, r := range p.client.DoMulti(ctx, counts...) {
		n, err := r.AsInt64()
		if err != nil {
			return nil, 0, wrapRedis("list batches", err)
		}
		total += n
	}
	type listed struct {
		id      uint64
		created float64
	}
	var all []listed
	// One bucket's listing at a time: sent together, a deep page's (16 of
	// 5,000 entries) held Redis from every other client for some 50 ms.
	for b := range p.opts.Buckets {
		entries, err := p.client.Do(ctx, p.client.B().Zrange().Key(p.keys.batch(b, 0)[5]).Min("+inf").Max("-inf").
			Byscore().Rev().Limit(0, int64(offset+limit)).Withscores().Build()).AsZScores()
		if err != nil {
			return nil, 0, wrapRedis("list batches", err)
		}
		for _, e := range entries {
			if id, err := strconv.ParseUint(e.Member, 10, 64); err == nil {
				all = append(all, listed{id, e.Score})
			}
		}
	}
	slices.SortFunc(all, func(a, b listed) int {
		return cmp.Or(cmp.Compare(b.created, a.created), cmp.Compare(b.id, a.id))
	})
	if offset >= len(all) {
		return []job.Batch{}, total, nil
	}
	all = all[offset:min(len(all), offset+limit)]
	// Their views without their dead jobs' errors (a batch's own read has
	// them), all in one pipeline: three commands a batch.
	var cmds rueidis.Commands
	per := 0 // commands a batch
	for _, l := range all {
		reads := p.batchReads(l.id, false)
		per = len(reads)
		cmds = append(cmds, reads...)
	}
	replies := p.client.DoMulti(ctx, cmds...)
	out := make([]job.Batch, 0, len(all))
	for i, l := range all {
		b, err := p.readBatch(l.id, replies[per*i:per*(i+1)])
		if errors.Is(err, job.ErrNotFound) {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, 0, err
		}
		out = append(out, b)
	}
	return out, total, nil
}
