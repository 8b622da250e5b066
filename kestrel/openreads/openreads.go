// Package openreads keeps one connection's open (reliable) reads, the
// kestrel front ends' transactions (memcache's get /open, the text
// protocol's get and monitor): each a job reserved for the connection,
// touched while the connection lives, acked when the client closes or
// confirms it, given back to the head of its queue by an abort or the
// connection's end. Both kestrel protocols need exactly this, so it lives
// here once rather than in each front end.
//
// A broker that dies with reads open loses the touches: the jobs' TTRs run
// out and they are delivered again, so nothing is lost either way.
package openreads

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/gmq/gmq/dispatcher"
	"github.com/gmq/gmq/internal/budget"
	"github.com/gmq/gmq/internal/tcpserver"
	"github.com/gmq/gmq/job"
)

// Options configure a connection's open reads.
type Options struct {
	Dispatcher *dispatcher.Dispatcher
	// RequestTimeout bounds each store call the reads make on their own: a
	// touch by the keeper, a give-back at the connection's end.
	RequestTimeout time.Duration
	// Log gets what failed where no client can be told (nil: nothing).
	Log *slog.Logger
	// Name names the front end in the log's lines ("kestrel").
	Name string
}

// Read is a job a connection holds open until it is acked or given back.
type Read struct {
	id      string
	attempt int
	ttr     time.Duration
	touched time.Time // when its TTR last restarted, on this machine's clock
}

// ID is the job's public id.
func (r *Read) ID() string { return r.id }

// Reads is one connection's open reads, per queue, oldest first. Its
// methods may be called from the connection's handler while its keeper
// runs; End stops the keeper and gives back what is still open.
type Reads struct {
	d       *dispatcher.Dispatcher
	timeout time.Duration
	log     *slog.Logger
	name    string
	ctx     context.Context // ends the keeper and its touches
	cancel  context.CancelFunc

	mu   sync.Mutex // open, shared with the keeper
	open map[string][]*Read
	keep sync.Once
	kept chan struct{} // closed when the keeper has stopped (or will never start)
}

// New returns a connection's (empty) open reads. ctx is the connection's:
// its end stops the keeper's touches; End must still be called once.
func New(ctx context.Context, opts Options) *Reads {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(ctx)
	return &Reads{d: opts.Dispatcher, timeout: opts.RequestTimeout, log: opts.Log, name: opts.Name,
		ctx: ctx, cancel: cancel, open: map[string][]*Read{}, kept: make(chan struct{})}
}

// Conn is a connection of a kestrel port whose reads stay open until it
// closes them (memcache's and text's): the kit's connection and its open
// reads.
type Conn struct {
	tcpserver.Conn
	Reads *Reads
}

// NewConn begins the connection nc on front f, with its (empty) open reads,
// which opts configure: opts.RequestTimeout bounds its writes too.
func NewConn(f *tcpserver.Front, nc net.Conn, opts Options) Conn {
	c := Conn{Conn: tcpserver.NewConn(f, nc, opts.RequestTimeout)}
	c.Reads = New(c.Ctx, opts)
	return c
}

// Serve runs c's requests as tcpserver.Serve does until the client hangs
// up or a handler ends the connection, then gives its open reads back to
// their queues.
func Serve[R any](c *Conn, opts tcpserver.Options, read func(r *bufio.Reader, hold *budget.Hold) (req R, last bool, err error), handle func(R) bool) {
	tcpserver.Serve(&c.Conn, opts, read, handle)
	c.Reads.End()
}

// Count is how many reads the connection holds open on queue.
func (rs *Reads) Count(queue string) int {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return len(rs.open[queue])
}

// Hold records j, just reserved from queue, as an open read and starts the
// keeper that touches it (the first time only: most connections never
// hold a read, and pay for no goroutine).
func (rs *Reads) Hold(queue string, j *job.Job) {
	rs.mu.Lock()
	rs.open[queue] = append(rs.open[queue], &Read{id: j.PublicID(), attempt: j.Attempt(), ttr: j.TTR, touched: time.Now()})
	rs.mu.Unlock()
	rs.keep.Do(func() { go rs.keeper() })
}

// Take removes and returns the oldest open read on queue (nil: none).
func (rs *Reads) Take(queue string) *Read {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	reads := rs.open[queue]
	if len(reads) == 0 {
		return nil
	}
	if len(reads) == 1 {
		delete(rs.open, queue)
	} else {
		rs.open[queue] = reads[1:]
	}
	return reads[0]
}

// restore puts open read r, taken from queue's for an ack the store could
// not settle, back at their head: still this connection's, to ack again or
// to give back when the connection ends.
func (rs *Reads) restore(queue string, r *Read) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.open[queue] = append([]*Read{r}, rs.open[queue]...)
}

// Ack acks open read r, taken from the connection's reads on queue (nil:
// none, no error). A read that went to another reader or ended
// (job.Superseded) is no error; one the store could not settle is put
// back, still open.
func (rs *Reads) Ack(ctx context.Context, queue string, r *Read) error {
	if r == nil {
		return nil
	}
	err := rs.settle(ctx, r, dispatcher.ActionAck)
	if job.Superseded(err) {
		return nil // its TTR ran out meanwhile and it went to another reader: nothing to ack
	}
	if err != nil {
		rs.restore(queue, r)
		return fmt.Errorf("ack open read %s of %q: %w", r.id, queue, err)
	}
	return nil
}

// AckOldest acks the oldest open read on queue (memcache's /close); none is
// no error.
func (rs *Reads) AckOldest(ctx context.Context, queue string) error {
	return rs.Ack(ctx, queue, rs.Take(queue))
}

// AckAll acks every open read on queue, oldest first (kestrel's
// closeAllReads, before each fetch of the text protocol). On a failure
// the reads not yet acked stay open.
func (rs *Reads) AckAll(ctx context.Context, queue string) error {
	for rs.Count(queue) > 0 {
		if err := rs.AckOldest(ctx, queue); err != nil {
			return err
		}
	}
	return nil
}

// Pop pops as p asks, acking closing first in the same call
// (dispatcher.PopParams.After) when it is not nil: a read taken from
// queue's (Take), for a reserving pop. If the store could not ack it, it
// is put back, still open, and the error returned; if it is gone
// (job.Superseded: its TTR ran out and it went to another reader), there
// is nothing to ack and the pop is made alone. An error that is a
// *job.AckedError (job.Acked) says the ack went through and only the pop
// failed.
func (rs *Reads) Pop(ctx context.Context, queue string, closing *Read, p dispatcher.PopParams) ([]*job.Job, error) {
	if closing != nil {
		p.After = &dispatcher.Ack{ID: closing.id, Attempt: closing.attempt}
	}
	jobs, err := rs.d.Pop(ctx, p)
	if p.After == nil || err == nil || job.Acked(err) {
		return jobs, err
	}
	if !job.Superseded(err) {
		rs.restore(queue, closing) // its ack failed with the pop: still open
		return jobs, err
	}
	p.After = nil
	return rs.d.Pop(ctx, p)
}

// settle does action to open read r's job.
func (rs *Reads) settle(ctx context.Context, r *Read, action dispatcher.Action) error {
	_, err := rs.d.Settle(ctx, dispatcher.SettleParams{Ack: dispatcher.Ack{ID: r.id, Attempt: r.attempt}, Action: action})
	return err
}

// Abort gives the oldest open read on queue back to the head of its queue
// (memcache's /abort); none, or one no longer the connection's
// (job.NotHeld), is no error.
func (rs *Reads) Abort(ctx context.Context, queue string) error {
	r := rs.Take(queue)
	if r == nil {
		return nil
	}
	err := rs.settle(ctx, r, dispatcher.ActionGiveBack)
	if job.NotHeld(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("give back open read %s of %q: %w", r.id, queue, err)
	}
	return nil
}

// End stops the keeper, waits for it, and gives every read still open back
// to its queue: the connection has ended. Call it once, after the
// connection's last request.
func (rs *Reads) End() {
	rs.cancel()
	rs.keep.Do(func() { close(rs.kept) }) // no keeper was started
	<-rs.kept
	rs.mu.Lock()
	queues := make([]string, 0, len(rs.open))
	for q := range rs.open {
		queues = append(queues, q)
	}
	rs.mu.Unlock()
	for _, q := range queues {
		for rs.Count(q) > 0 {
			ctx, cancel := context.WithTimeout(context.Background(), rs.timeout)
			if err := rs.Abort(ctx, q); err != nil {
				rs.log.Warn(rs.name+": giving back an open read of a closed connection failed; its TTR will", "queue", q, "err", err)
			}
			cancel()
		}
	}
}

// keeper touches the connection's open reads until End (or the
// connection's end), each when a third of its TTR has passed, so that an
// open read is held until it is acked however long the client takes.
func (rs *Reads) keeper() {
	defer close(rs.kept)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-rs.ctx.Done():
			return
		case <-tick.C:
		}
		for _, r := range rs.due() {
			ctx, cancel := context.WithTimeout(rs.ctx, rs.timeout)
			err := rs.settle(ctx, r, dispatcher.ActionTouch)
			cancel()
			rs.mu.Lock()
			r.touched = time.Now()
			rs.mu.Unlock()
			if err != nil && rs.ctx.Err() == nil {
				rs.log.Warn(rs.name+": touching an open read failed", "id", r.id, "err", err)
			}
		}
	}
}

// due lists the open reads a third of whose TTR has passed since their last touch.
func (rs *Reads) due() []*Read {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var due []*Read
	for _, reads := range rs.open {
		for _, r := range reads {
			if time.Since(r.touched) >= r.ttr/3 {
				due = append(due, r)
			}
		}
	}
	return due
}

// MonitorParams are a monitor command's: take items of Queue one at a
// time, each as it comes, until Most are taken, MaxOpen are open on the
// queue, or none comes before Deadline. LateTake makes a pop after the
// deadline still take what is ready now (kestrel's text protocol); else
// the monitor ends at its deadline (memcache's). Each pop may wait
// RequestTimeout past what it waits for.
type MonitorParams struct {
	Queue          string
	Deadline       time.Time
	Most, MaxOpen  int
	RequestTimeout time.Duration
	LateTake       bool
	Deliver        func(*job.Job) error // hands an item to the client (and holds it: Hold); an error ends the monitor with it
}

// Monitor runs a monitor command on ctx, the connection's (whose end ends
// a pop that waits): it returns Deliver's error, or a pop's.
func (rs *Reads) Monitor(ctx context.Context, p MonitorParams) error {
	for got := 0; got < p.Most && rs.Count(p.Queue) < p.MaxOpen; got++ {
		wait := time.Until(p.Deadline)
		if wait <= 0 && !p.LateTake {
			return nil
		}
		wait = max(wait, 0)
		pctx, cancel := context.WithTimeout(ctx, wait+p.RequestTimeout)
		jobs, err := rs.d.Pop(pctx, dispatcher.PopParams{Topics: []string{p.Queue}, Timeout: wait})
		cancel()
		if err != nil {
			return err
		}
		if len(jobs) == 0 {
			return nil
		}
		if err := p.Deliver(jobs[0]); err != nil {
			return err
		}
	}
	return nil
}
