package pool

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/redis/rueidis"

	"github.com/gmq/gmq/job"
)

// MaxBatchesListed is how deep Batches reaches into the newest batches
// (offset plus limit): each bucket lists that many of its own to merge,
// so the cost grows with the depth, not with how many batches are kept.
// Older batches are read by id.
const MaxBatchesListed = 5000

// batchesRead is how many batches' views Batches reads at once.
const batchesRead = 16

// Batches lists the batches kept (not yet past their retention), newest
// first: limit of them from offset, and how many are kept in all. Every
// bucket keeps its batches in a sorted set by creation time; Batches reads
// the first offset+limit of each (at most MaxBatchesListed), merges them
// and reads the views of those it answers. A batch removed meanwhile is
// left out.
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
	views := make([]job.Batch, len(all))
	found := make([]bool, len(all))
	errs := make([]error, len(all))
	var wg sync.WaitGroup
	turns := make(chan struct{}, batchesRead)
	for i, l := range all {
		wg.Go(func() {
			turns <- struct{}{}
			defer func() { <-turns }()
			views[i], errs[i] = p.Batch(ctx, l.id)
			found[i] = errs[i] == nil
			if errors.Is(errs[i], job.ErrNotFound) {
				errs[i] = nil
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, 0, err
	}
	out := views[:0]
	for i, v := range views {
		if found[i] {
			out = append(out, v)
		}
	}
	return out, total, nil
}
