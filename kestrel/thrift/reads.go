package thrift

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/gmq/gmq/dispatcher"
	"github.com/gmq/gmq/job"
)

// read is one open read: a job reserved by a reliable get, held until it
// is confirmed, aborted, or its auto-abort time passes.
type read struct {
	id      int64 // its wire id (ids.go)
	ack     dispatcher.Ack
	queue   string
	owner   uint64        // the connection that opened it, whose count it is in (0: that connection has ended)
	touchIn time.Duration // how often its job is touched: a third of its TTR
	touched time.Time     // when its TTR last restarted, on this machine's clock
	abortAt time.Time     // zero while the get that opened it still gathers items
}

// registry holds every open read of the server, by id, so that any
// connection may confirm or abort one and none ends with the connection
// that opened it. Its keeper, one goroutine started with the first read,
// touches each read's job before its TTR runs out and gives it back when
// its auto-abort time passes; close stops it.
type registry struct {
	d       *dispatcher.Dispatcher
	timeout time.Duration // of each store call the keeper makes
	log     *slog.Logger
	ctx     context.Context // ends the keeper and its calls
	cancel  context.CancelFunc
	wake    chan struct{} // a read came whose touch or abort is due sooner than the keeper thought
	keep    sync.Once
	kept    chan struct{} // closed when the keeper has stopped (or will never start)

	mu     sync.Mutex
	open   map[int64]*read
	counts map[uint64]map[string]int // connection → queue → its open reads there
}

func newRegistry(d *dispatcher.Dispatcher, timeout time.Duration, log *slog.Logger) *registry {
	ctx, cancel := context.WithCancel(context.Background())
	return &registry{d: d, timeout: timeout, log: log, ctx: ctx, cancel: cancel,
		wake: make(chan struct{}, 1), kept: make(chan struct{}),
		open: map[int64]*read{}, counts: map[uint64]map[string]int{}}
}

// byNumber names delivery attempt of job number: a job's number names it
// whether or not it has a client id, and never names another job.
func byNumber(number uint64, attempt int) dispatcher.Ack {
	return dispatcher.Ack{ID: strconv.FormatUint(number, 10), Attempt: attempt}
}

// minTouch bounds how often one job is touched, whatever its TTR.
const minTouch = 10 * time.Millisecond

// hold records j, just reserved from queue by connection owner's get, as
// an open read, not yet armed (arm), and returns its id. A job that cannot
// be held (its TTR 0: removed as it was popped; or a number an id cannot
// carry) is given an id but not held.
func (rs *registry) hold(owner uint64, queue string, j *job.Job) int64 {
	id, ok := packID(j)
	if !ok || j.TTR <= 0 {
		return id
	}
	r := &read{id: id, ack: byNumber(j.ID, j.Attempt()),
		queue: queue, owner: owner, touchIn: max(j.TTR/3, minTouch), touched: time.Now()}
	rs.mu.Lock()
	rs.open[id] = r
	if rs.counts[owner] == nil {
		rs.counts[owner] = map[string]int{}
	}
	rs.counts[owner][queue]++
	rs.mu.Unlock()
	rs.keep.Do(func() { go rs.keeper() })
	rs.nudge()
	return id
}

// arm starts the auto-abort clocks of reads ids: each is given back unless
// settled within after.
func (rs *registry) arm(ids []int64, after time.Duration) {
	at := time.Now().Add(after)
	rs.mu.Lock()
	for _, id := range ids {
		if r := rs.open[id]; r != nil {
			r.abortAt = at
		}
	}
	rs.mu.Unlock()
	rs.nudge()
}

// nudge wakes the keeper to look again when its next round is due.
func (rs *registry) nudge() {
	select {
	case rs.wake <- struct{}{}:
	default:
	}
}

// count is how many reads connection owner holds open on queue.
func (rs *registry) count(owner uint64, queue string) int {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.counts[owner][queue]
}

// take removes read id and returns it (nil: none), out of its owner's count.
func (rs *registry) take(id int64) *read {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	r := rs.open[id]
	if r != nil {
		rs.drop(r)
	}
	return r
}

// drop removes r; rs.mu is held.
func (rs *registry) drop(r *read) {
	delete(rs.open, r.id)
	if c := rs.counts[r.owner]; c != nil && c[r.queue] > 0 {
		c[r.queue]--
	}
}

// restore puts back r, taken for a settle the store could not make.
func (rs *registry) restore(r *read) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if _, ok := rs.open[r.id]; ok {
		return
	}
	rs.open[r.id] = r
	if c := rs.counts[r.owner]; c != nil {
		c[r.queue]++
	}
}

// disown forgets connection owner's counts: it has ended. Its reads stay
// open, as kestrel's do, until confirmed, aborted or their time is up.
func (rs *registry) disown(owner uint64) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	delete(rs.counts, owner)
	for _, r := range rs.open {
		if r.owner == owner {
			r.owner = 0
		}
	}
}

// close stops the keeper, waits for it, and gives every read still open
// back to its queue: the server is closing.
func (rs *registry) close() {
	rs.cancel()
	rs.keep.Do(func() { close(rs.kept) }) // no keeper was started
	<-rs.kept
	rs.mu.Lock()
	left := make([]*read, 0, len(rs.open))
	for _, r := range rs.open {
		left = append(left, r)
		rs.drop(r)
	}
	rs.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), rs.timeout)
	defer cancel()
	rs.giveBack(ctx, left)
}
