package thrift

import (
	"context"
	"fmt"
	"time"

	"github.com/gmq/gmq/dispatcher"
	"github.com/gmq/gmq/job"
)

// idle is how long the keeper sleeps when no read is open: a new one wakes it.
const idle = time.Hour

// settleChunk is how many settles run at once (dispatcher.SettleMany runs
// each on its own goroutine, so that their calls share scripts).
const settleChunk = 256

// keeper gives back the reads whose time is up and touches the others'
// jobs, each when a third of its TTR has passed, until close.
func (rs *registry) keeper() {
	defer close(rs.kept)
	timer := time.NewTimer(idle)
	defer timer.Stop()
	for {
		timer.Reset(max(time.Until(rs.round()), 0))
		select {
		case <-rs.ctx.Done():
			return
		case <-timer.C:
		case <-rs.wake:
		}
	}
}

// round does what is due now and says when the next round is due.
func (rs *registry) round() time.Time {
	expired, touch, next := rs.due(time.Now())
	if len(expired)+len(touch) == 0 {
		return next
	}
	ctx, cancel := context.WithTimeout(rs.ctx, rs.timeout)
	defer cancel()
	rs.giveBack(ctx, expired)
	rs.touch(ctx, touch)
	return next
}

// due takes out the reads whose auto-abort time has passed and lists those
// to touch now (marking them touched), and says when the next is due. A
// read to be given back before its TTR could run out is not touched.
func (rs *registry) due(now time.Time) (expired, touch []*read, next time.Time) {
	next = now.Add(idle)
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, r := range rs.open {
		armed := !r.abortAt.IsZero()
		if armed && !now.Before(r.abortAt) {
			rs.drop(r)
			expired = append(expired, r)
			continue
		}
		if armed && r.abortAt.Before(next) {
			next = r.abortAt
		}
		if armed && r.abortAt.Sub(now) <= r.touchIn {
			continue // given back a touch's interval before its TTR runs out: no touch needed
		}
		if now.Sub(r.touched) >= r.touchIn {
			r.touched = now
			touch = append(touch, r)
		}
		if t := r.touched.Add(r.touchIn); t.Before(next) {
			next = t
		}
	}
	return expired, touch, next
}

// touch starts the TTRs of reads' jobs again; a read no longer open (its
// queue flushed, settled on another broker) is forgotten.
func (rs *registry) touch(ctx context.Context, reads []*read) {
	for i, err := range settleAll(ctx, rs.d, reads, dispatcher.ActionTouch) {
		switch {
		case err == nil:
		case job.NotHeld(err):
			rs.forget(reads[i])
		case ctx.Err() == nil:
			rs.log.Warn("kestrel thrift: touching an open read failed; trying again", "queue", reads[i].queue,
				"job", reads[i].ack.ID, "err", err)
		}
	}
}

// giveBack gives reads' jobs back to the heads of their queues.
func (rs *registry) giveBack(ctx context.Context, reads []*read) {
	for i, err := range settleAll(ctx, rs.d, reads, dispatcher.ActionGiveBack) {
		if err != nil && !job.NotHeld(err) {
			rs.log.Warn("kestrel thrift: giving back an open read failed; its TTR will", "queue", reads[i].queue,
				"job", reads[i].ack.ID, "err", err)
		}
	}
}

// forget removes r if it is still open.
func (rs *registry) forget(r *read) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.open[r.id] == r {
		rs.drop(r)
	}
}

// settle confirms (dispatcher.ActionAck) or aborts (ActionGiveBack) the
// reads ids name and says how many it settled. An id no read here holds
// is settled by the delivery it carries (ids.go), so that a read opened on
// another broker, or before a restart, can be settled too; an id that
// names no open delivery (settled, given back, delivered again since) is
// not counted. A read the store could not settle stays open; the error is
// returned only when none was settled, else logged.
func (rs *registry) settle(ctx context.Context, ids []int64, action dispatcher.Action) (int, error) {
	reads, held := rs.claim(ids)
	n := 0
	var failed error
	for i, err := range settleAll(ctx, rs.d, reads, action) {
		switch {
		case err == nil:
			n++
		case job.NotHeld(err):
		default:
			if held[i] {
				rs.restore(reads[i])
			}
			if failed == nil {
				failed = fmt.Errorf("read %d (job %s): %w", reads[i].id, reads[i].ack.ID, err)
			}
		}
	}
	if failed != nil && n == 0 {
		return 0, failed
	}
	if failed != nil {
		rs.log.Warn("kestrel thrift: some open reads could not be settled; they stay open", "settled", n, "err", failed)
	}
	return n, nil
}

// claim takes the reads ids name out of the registry (held), or makes
// one from an id it does not hold; ids no get hands out, and repeats, are
// left out.
func (rs *registry) claim(ids []int64) (reads []*read, held []bool) {
	seen := make(map[int64]bool, len(ids))
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		if r := rs.take(id); r != nil {
			reads, held = append(reads, r), append(held, true)
			continue
		}
		if number, attempt, ok := unpackID(id); ok {
			reads, held = append(reads, &read{id: id, ack: byNumber(number, attempt)}), append(held, false)
		}
	}
	return reads, held
}

// settleAll does action to each read's job, settleChunk at once, and
// returns each one's error.
func settleAll(ctx context.Context, d *dispatcher.Dispatcher, reads []*read, action dispatcher.Action) []error {
	errs := make([]error, 0, len(reads))
	for start := 0; start < len(reads); start += settleChunk {
		chunk := reads[start:min(start+settleChunk, len(reads))]
		ps := make([]dispatcher.SettleParams, len(chunk))
		for i, r := range chunk {
			ps[i] = dispatcher.SettleParams{Ack: r.ack, Action: action}
		}
		_, e := d.SettleMany(ctx, ps)
		errs = append(errs, e...)
	}
	return errs
}
