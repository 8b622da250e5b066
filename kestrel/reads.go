package kestrel

// A connection's open (reliable) reads: each a job reserved for it,
// touched while the connection lives, acked by /close, given back by
// /abort or the connection's end.

import (
	"context"
	"errors"
	"time"

	"github.com/gmq/gmq/dispatcher"
	"github.com/gmq/gmq/job"
)

// openRead is a job a connection holds open (get /open) until /close.
type openRead struct {
	id      string
	attempt int
	ttr     time.Duration
	touched time.Time // when its TTR last restarted, on this machine's clock
}

// openCount is how many reads the connection holds open on queue.
func (c *conn) openCount(queue string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.open[queue])
}

// hold records an open read and starts the keeper that touches it.
func (c *conn) hold(queue string, j *job.Job) {
	c.mu.Lock()
	c.open[queue] = append(c.open[queue], &openRead{id: j.PublicID(), attempt: j.Attempt(), ttr: j.TTR, touched: time.Now()})
	c.mu.Unlock()
	c.keep.Do(func() { go c.keeper() })
}

// take removes and returns the connection's oldest open read on queue, if any.
func (c *conn) take(queue string) *openRead {
	c.mu.Lock()
	defer c.mu.Unlock()
	reads := c.open[queue]
	if len(reads) == 0 {
		return nil
	}
	if len(reads) == 1 {
		delete(c.open, queue)
	} else {
		c.open[queue] = reads[1:]
	}
	return reads[0]
}

// closeRead acks the oldest open read on queue (/close); none is no error.
func (c *conn) closeRead(ctx context.Context, queue string) error {
	return c.ackRead(ctx, queue, c.take(queue))
}

// restore puts open read r, taken from queue's for a /close the store
// could not settle, back at their head: still this connection's, to close
// again or to give back when the connection ends.
func (c *conn) restore(queue string, r *openRead) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.open[queue] = append([]*openRead{r}, c.open[queue]...)
}

// ackRead acks open read r, taken from the connection's reads on queue
// (nil: none, no error); one the store could not settle is put back.
func (c *conn) ackRead(ctx context.Context, queue string, r *openRead) error {
	if r == nil {
		return nil
	}
	err := c.settle(ctx, r, dispatcher.ActionAck)
	if readGone(err) {
		return nil // its TTR ran out meanwhile and it went to another reader: nothing to close
	}
	if err != nil {
		c.restore(queue, r)
	}
	return err
}

// settle does action to open read r's job.
func (c *conn) settle(ctx context.Context, r *openRead, action dispatcher.Action) error {
	_, err := c.s.d.Settle(ctx, dispatcher.SettleParams{Ack: dispatcher.Ack{ID: r.id, Attempt: r.attempt}, Action: action})
	return err
}

// readGone says an open read's ack failed because the read is no longer
// this connection's: its TTR ran out and it went back (or to another
// reader, who may have finished it).
func readGone(err error) bool {
	return errors.Is(err, job.ErrStale) || errors.Is(err, job.ErrNotFound)
}

// abort gives the oldest open read on queue back to the head of its queue (/abort).
func (c *conn) abort(ctx context.Context, queue string) error {
	r := c.take(queue)
	if r == nil {
		return nil
	}
	err := c.settle(ctx, r, dispatcher.ActionGiveBack)
	if errors.Is(err, job.ErrStale) || errors.Is(err, job.ErrNotFound) || errors.Is(err, job.ErrNotReserved) {
		return nil
	}
	return err
}

// abortAll gives back every open read of a closed connection.
func (c *conn) abortAll() {
	c.mu.Lock()
	queues := make([]string, 0, len(c.open))
	for q := range c.open {
		queues = append(queues, q)
	}
	c.mu.Unlock()
	for _, q := range queues {
		for c.openCount(q) > 0 {
			ctx, cancel := context.WithTimeout(context.Background(), c.s.opts.RequestTimeout)
			if err := c.abort(ctx, q); err != nil {
				c.s.log.Warn("kestrel: giving back an open read of a closed connection failed; its TTR will", "queue", q, "err", err)
			}
			cancel()
		}
	}
}

// keeper touches the connection's open reads while it lives, each when a
// third of its TTR has passed, so that an open read is held until /close
// however long the client takes.
func (c *conn) keeper() {
	defer close(c.kept)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-tick.C:
		}
		c.mu.Lock()
		var due []*openRead
		for _, reads := range c.open {
			for _, r := range reads {
				if time.Since(r.touched) >= r.ttr/3 {
					due = append(due, r)
				}
			}
		}
		c.mu.Unlock()
		for _, r := range due {
			ctx, cancel := context.WithTimeout(c.ctx, c.s.opts.RequestTimeout)
			err := c.settle(ctx, r, dispatcher.ActionTouch)
			cancel()
			c.mu.Lock()
			r.touched = time.Now()
			c.mu.Unlock()
			if err != nil && c.ctx.Err() == nil {
				c.s.log.Warn("kestrel: touching an open read failed", "id", r.id, "err", err)
			}
		}
	}
}
