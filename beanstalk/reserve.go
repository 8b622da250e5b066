package beanstalk

// reserve and its waits: DEADLINE_SOON, TIMED_OUT, and the reservations a
// connection holds.

import (
	"context"
	"strconv"
	"time"

	"github.com/gmq/gmq/dispatcher"
	"github.com/gmq/gmq/job"
)

// safetyMargin is beanstalkd's: in the last second before a reservation runs
// out, reserve answers DEADLINE_SOON instead of waiting.
const safetyMargin = time.Second

// soonest is the earliest deadline of this connection's live reservations;
// those past their deadline went back to ready and are forgotten.
func (c *conn) soonest() (time.Time, bool) {
	now := time.Now()
	var first time.Time
	for id, r := range c.reserved {
		if !r.deadline.After(now) {
			delete(c.reserved, id)
			continue
		}
		if first.IsZero() || r.deadline.Before(first) {
			first = r.deadline
		}
	}
	return first, !first.IsZero()
}

// reserve waits up to timeout seconds (negative: forever) for a job of a
// watched tube.
func (c *conn) reserve(timeout int64) error {
	c.worker.Store(true)
	if d, ok := c.soonest(); ok && time.Until(d) <= safetyMargin {
		// In the margin already: a ready job is still handed out, else DEADLINE_SOON.
		j, err := c.tryReserve(0)
		if err == nil && j == nil && c.ctx.Err() == nil {
			c.reply(msgDeadlineSoon)
		}
		return err
	}
	var deadline time.Time
	if timeout >= 0 {
		deadline = time.Now().Add(time.Duration(timeout) * time.Second)
	}
	c.setWaiting(1)
	defer c.setWaiting(-1)
	for {
		wait := time.Hour
		if !deadline.IsZero() {
			wait = time.Until(deadline)
		}
		margin, hasMargin := c.soonest()
		if hasMargin {
			wait = min(wait, time.Until(margin)-safetyMargin)
		}
		j, err := c.tryReserve(max(wait, 0))
		if err != nil || j != nil || c.ctx.Err() != nil { // c.ctx ended: the client went away, nothing to answer
			return err
		}
		if hasMargin && time.Until(margin) <= safetyMargin {
			c.reply(msgDeadlineSoon)
			return nil
		}
		if !deadline.IsZero() && !time.Now().Before(deadline) {
			c.reply(msgTimedOut)
			return nil
		}
	}
}

// tryReserve reserves a job of the watched tubes within wait and answers
// RESERVED; it returns the job (nil if none came, or if the client went
// away: c.ctx ended), or why none can come.
func (c *conn) tryReserve(wait time.Duration) (*job.Job, error) {
	ctx, cancel := context.WithTimeout(c.ctx, wait+c.s.opts.RequestTimeout)
	defer cancel()
	jobs, err := c.s.d.Pop(ctx, dispatcher.PopParams{Topics: c.watch, Timeout: wait, Order: dispatcher.BestOrder})
	if err != nil {
		if c.ctx.Err() != nil {
			return nil, nil // the client went away: nothing to answer
		}
		return nil, err
	}
	if len(jobs) == 0 {
		return nil, nil
	}
	c.hold(jobs[0])
	c.replyJob("RESERVED", jobs[0])
	return jobs[0], nil
}

// hold records a job this connection reserved.
func (c *conn) hold(j *job.Job) {
	if j.State == job.Reserved {
		c.reserved[j.ID] = reservation{attempt: j.Attempt(), ttr: j.TTR, deadline: time.Now().Add(j.TimeLeft())}
	}
}

func (c *conn) setWaiting(delta int) {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	c.s.waiting += delta
	for _, t := range c.watch {
		c.s.ref(t, func(r *tubeRefs) { r.waiting += delta })
	}
}

func (c *conn) reserveJob(ctx context.Context, id uint64) error {
	j, err := c.s.d.ReserveJob(ctx, strconv.FormatUint(id, 10))
	if err != nil {
		return err
	}
	c.worker.Store(true)
	c.hold(j)
	c.replyJob("RESERVED", j)
	return nil
}
