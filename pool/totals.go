package pool

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/redis/rueidis"

	"github.com/gmq/gmq/lua"
)

// totals are the counters that the batch calls (pushes, pops, acks and
// deletes: the hot path) leave to the broker: total_jobs, total_reserves
// and total_deletes of a bucket's stats and of its topics (lib.lua flush
// says which). Each call's reply ends with what it counted; the pool adds
// those up here and FlushTotals writes them, one script call per bucket,
// at most once a second (the dispatcher's chore, and once more at
// shutdown). So a plain job's life makes five HINCRBYs fewer. What it
// costs: a stats read on another broker may lag a second, and a broker
// killed loses at most its last second of totals (never a job, nor a
// current count: those stay in the calls that move jobs).
//
// A read on this broker adds what it has not written yet, under the read
// side of flushing, whose write side a flush holds from taking the sums to
// writing them: so a read sees each amount once, in Redis or here, never
// both or neither.
type totals struct {
	flushing sync.RWMutex

	mu      sync.Mutex
	pending []map[string]map[string]int64 // by bucket: hash key -> field -> amount
}

func newTotals(buckets int) *totals {
	return &totals{pending: make([]map[string]map[string]int64, buckets)}
}

// add records a batch reply's totals for bucket b: its status (TOTALS),
// then hash key, field, amount, and more triples.
func (t *totals) add(b int, r []rueidis.RedisMessage) error {
	if (len(r)-1)%3 != 0 {
		return fmt.Errorf("totals: %d fields after the status", len(r)-1)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := 1; i < len(r); i += 3 {
		n, err := r[i+2].AsInt64()
		if err != nil {
			return fmt.Errorf("totals: %w", err)
		}
		t.addOne(b, strAt(r, i), strAt(r, i+1), n)
	}
	return nil
}

// addOne adds n to field of hash key in bucket b; t.mu is held.
func (t *totals) addOne(b int, key, field string, n int64) {
	fields := t.pending[b][key]
	if fields == nil {
		if t.pending[b] == nil {
			t.pending[b] = map[string]map[string]int64{}
		}
		fields = map[string]int64{}
		t.pending[b][key] = fields
	}
	fields[field] += n
}

// take removes bucket b's pending totals and returns them.
func (t *totals) take(b int) map[string]map[string]int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	got := t.pending[b]
	t.pending[b] = nil
	return got
}

// putBack returns totals a flush could not write, to be tried again.
func (t *totals) putBack(b int, sums map[string]map[string]int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for key, fields := range sums {
		for field, n := range fields {
			t.addOne(b, key, field, n)
		}
	}
}

// FlushTotals writes the totals this broker counted and has not written
// (totals), one script call per bucket that has any. Totals it cannot
// write are kept for the next flush; the error says why.
func (p *Pool) FlushTotals(ctx context.Context) error {
	p.totals.flushing.Lock()
	defer p.totals.flushing.Unlock()
	var errs []error
	for b := range p.opts.Buckets {
		sums := p.totals.take(b)
		if len(sums) == 0 {
			continue
		}
		keys := make([]string, 0, len(sums))
		args := lua.Args("add_totals")
		for key, fields := range sums {
			keys = append(keys, key)
			place := strconv.Itoa(len(keys))
			for field, n := range fields {
				args = append(args, place, field, strconv.FormatInt(n, 10))
			}
		}
		if err := addTotalsScript.Exec(ctx, p.client, keys, args).Error(); err != nil {
			p.totals.putBack(b, sums)
			errs = append(errs, wrapRedis(fmt.Sprintf("write bucket %d's totals", b), err))
		}
	}
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	return fmt.Errorf("%w (and %d more buckets)", errs[0], len(errs)-1)
}

// withPending adds to a hash's fields, as read from Redis, what this broker
// has counted of them and not written. The caller holds t.flushing's read
// side from before its read of the hash.
func (t *totals) withPending(b int, key string, add func(field string, n int64)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for field, n := range t.pending[b][key] {
		add(field, n)
	}
}
