package pool

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

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
// killed loses at most its last second of totals, as does a call whose
// answer is lost (never a job, nor a current count: those stay in the
// calls that move jobs).
//
// A write is numbered (a bucket's batch of sums, its seq) and retried as
// it is until Redis says it has it; add_totals.lua keeps the last number it
// added for this broker, so a write that landed though its answer was lost
// (a timeout, a stop) is not added twice. New sums wait in pending meanwhile.
//
// A read on this broker adds what it has not written, pending and in
// flight, under the read side of flushing, whose write side a flush holds
// from taking the sums to knowing their fate, for at most
// totalsWriteTimeout: so a read sees each amount once, in Redis or here.
// (A write whose fate is unknown, Redis having stalled past the timeout,
// may show twice until its retry.)
type totals struct {
	flushing sync.RWMutex

	mu       sync.Mutex
	pending  []map[string]map[string]int64 // by bucket: hash key -> field -> amount
	inflight []*totalsWrite                // by bucket: a write not known to have landed
	seq      int64                         // the last write's number
}

// totalsWrite is one bucket's write of sums, numbered.
type totalsWrite struct {
	seq  int64
	sums map[string]map[string]int64
}

// totalsWriteTimeout bounds a flush, and so how long it keeps stats reads
// waiting while Redis does not answer.
const totalsWriteTimeout = time.Second

// totalsSeqTTL is how long add_totals.lua keeps a broker's last write
// number in a bucket: far longer than a retry takes (a second, while Redis
// answers), and it goes by itself once the broker is gone.
const totalsSeqTTL = time.Hour

func newTotals(buckets int) *totals {
	return &totals{pending: make([]map[string]map[string]int64, buckets), inflight: make([]*totalsWrite, buckets)}
}

// add records a batch reply's totals for bucket b: its status (TOTALS),
// then hash key, field, amount, and more triples.
func (t *totals) add(b int, r batchExtraReply) error {
	if (r.Values-1)%3 != 0 {
		return fmt.Errorf("totals: %d values after the status", r.Values-1)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, add := range r.Adds {
		key, field, amount := add[0], add[1], add[2]
		n, err := strconv.ParseInt(amount, 10, 64)
		if err != nil {
			return fmt.Errorf("totals: %w", err)
		}
		t.addOne(b, key, field, n)
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

// forget drops what this broker counted and has not written of hash key
// in bucket b: a topic forgotten or deleted here, whose totals went with
// it, and which a push may make anew before the next write.
func (t *totals) forget(b int, key string) {
	t.flushing.Lock() // a write in flight reads its sums
	defer t.flushing.Unlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.pending[b], key)
	if w := t.inflight[b]; w != nil {
		delete(w.sums, key)
	}
}

// dropAll drops every total not written: the store they counted in is
// gone (Redis lost its data; Init records it anew).
func (t *totals) dropAll() {
	t.flushing.Lock()
	defer t.flushing.Unlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	clear(t.pending)
	clear(t.inflight)
}

// FlushTotals writes the totals this broker counted and has not written
// (totals), one script call per bucket that has any, all at once, for at
// most totalsWriteTimeout. A write that fails is tried again, as it is, at
// the next flush; the error says why.
func (p *Pool) FlushTotals(ctx context.Context) error {
	t := p.totals
	t.flushing.Lock()
	defer t.flushing.Unlock()
	t.mu.Lock()
	var writes []int // buckets with a write to make
	for b := range p.opts.Buckets {
		if t.inflight[b] == nil && len(t.pending[b]) > 0 {
			t.seq++
			t.inflight[b] = &totalsWrite{seq: t.seq, sums: t.pending[b]}
			t.pending[b] = nil
		}
		if t.inflight[b] != nil {
			writes = append(writes, b)
		}
	}
	t.mu.Unlock()
	if len(writes) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, totalsWriteTimeout)
	defer cancel()
	errs := make([]error, len(writes))
	var wg sync.WaitGroup
	for i, b := range writes {
		w := t.inflight[b] // only a flush, holding flushing, sets or clears it
		keys := []string{p.keys.totalsSeq(b, p.opts.Origin)}
		args := lua.Args("add_totals", "seq", strconv.FormatInt(w.seq, 10), "ttl", strconv.FormatInt(totalsSeqTTL.Milliseconds(), 10))
		for key, fields := range w.sums {
			keys = append(keys, key)
			place := strconv.Itoa(len(keys))
			for field, n := range fields {
				args = append(args, place, field, strconv.FormatInt(n, 10))
			}
		}
		wg.Go(func() {
			if err := addTotalsScript.Exec(ctx, p.client, keys, args).Error(); err != nil {
				errs[i] = wrapRedis(fmt.Sprintf("write bucket %d's totals", b), err)
			}
		})
	}
	wg.Wait()
	t.mu.Lock()
	defer t.mu.Unlock()
	var failed []error
	for i, b := range writes {
		if errs[i] == nil {
			t.inflight[b] = nil
		} else {
			failed = append(failed, errs[i])
		}
	}
	return errors.Join(failed...) // each bucket's, nil when none failed
}

// withPending adds to a hash's fields, as read from Redis, what this broker
// has counted of them and not written, pending or in flight. The caller
// holds t.flushing's read side from before its read of the hash.
func (t *totals) withPending(b int, key string, add func(field string, n int64)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for field, n := range t.pending[b][key] {
		add(field, n)
	}
	if w := t.inflight[b]; w != nil {
		for field, n := range w.sums[key] {
			add(field, n)
		}
	}
}
