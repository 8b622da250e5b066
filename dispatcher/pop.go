package dispatcher

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gmq/gmq/job"
	"github.com/gmq/gmq/pool"
)

// Order is how a pop of several topics chooses among them.
type Order uint8

const (
	// TopicOrder takes from the first listed topic that has a ready job
	// (gmq's and kestrel's order; each topic's own order within it).
	TopicOrder Order = iota
	// BestOrder takes the ready job with the lowest (priority, id) among
	// all the topics, whatever their order: beanstalkd's reserve.
	BestOrder
)

// Keep is what a pop leaves of the jobs it gives.
type Keep uint8

const (
	// Reserve holds each job for its consumer until it is acked (or
	// released, buried, failed), or delivered again when its TTR runs out.
	Reserve Keep = iota
	// Take removes each job as it is popped, in the same script, whatever
	// its TTR: no ack follows (kestrel's plain get).
	Take
	// Peek leaves the job ready: a look at the next job of one topic.
	Peek
)

// PopParams is what a consumer asks for: up to Count jobs (0: one) from
// Topics, waiting up to Timeout for the first, chosen by Order and kept as
// Keep says. After, when set, is a delivery to ack first (a consumer's
// "done with that, give me the next": HTTP's ack with next, kestrel's
// /close/open): if the ack fails nothing is popped; if what follows it
// fails, the error is a *job.AckedError, so that a client retries only the
// pop. One job's pop after an ack, of topics in the job's bucket, is one
// script with the ack.
type PopParams struct {
	Topics  []string
	Timeout time.Duration
	Order   Order
	Count   int
	Keep    Keep
	After   *Ack
}

// Pop gives up to p.Count jobs (none: nil, nil, when the time is up). No
// Redis connection is held while it waits. Not every combination is a pop
// gmq makes: several jobs are reserved in TopicOrder; a Take or a Peek
// gives one job, a Peek of one topic; an ack goes before a reserving pop
// in TopicOrder.
func (d *Dispatcher) Pop(ctx context.Context, p PopParams) ([]*job.Job, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	if p.After != nil {
		return d.ackAndPop(ctx, *p.After, p)
	}
	if p.Count > 1 {
		return d.popMany(ctx, p.Topics, p.Count, p.Timeout)
	}
	pop := d.pool.Pop
	switch {
	case p.Keep == Take:
		pop = d.pool.Take
	case p.Keep == Peek:
		pop = d.peek
	case p.Order == BestOrder:
		pop = d.pool.PopBest
	}
	got, err := d.wait(ctx, p.Topics, p.Timeout, false, pop)
	if got.Job == nil {
		return nil, err
	}
	return []*job.Job{got.Job}, err
}

// check refuses the pops gmq does not make (Pop).
func (p PopParams) check() error {
	var why string
	switch {
	case p.Count < 0:
		why = fmt.Sprintf("a pop takes at least 1 job, asked for %d", p.Count)
	case p.Keep != Reserve && p.Count > 1:
		why = "a take or a peek gives one job"
	case p.Keep == Peek && len(p.Topics) != 1:
		why = "a peek looks at one topic"
	case p.Order == BestOrder && (p.Count > 1 || p.Keep == Take):
		why = "beanstalkd's order reserves one job"
	case p.After != nil && (p.Keep != Reserve || p.Order != TopicOrder):
		why = "an ack goes before a reserving pop in the topics' order"
	default:
		return nil
	}
	return fmt.Errorf("%w: %s", job.ErrInvalid, why)
}

// peek is a pop that reads the next ready job of topics[0] and leaves it.
func (d *Dispatcher) peek(ctx context.Context, topics []string) (pool.Popped, error) {
	j, err := d.pool.PeekTopic(ctx, topics[0], job.Ready)
	if errors.Is(err, job.ErrNotFound) {
		return pool.Popped{}, nil
	}
	if err != nil {
		return pool.Popped{}, err
	}
	// The job stays ready: pass on the wake-up this look may have taken.
	return pool.Popped{Job: j, More: true}, nil
}

// popMany waits up to timeout for a job as a pop of one does, and then
// takes up to n, as many as are ready.
func (d *Dispatcher) popMany(ctx context.Context, topics []string, n int, timeout time.Duration) ([]*job.Job, error) {
	got, err := d.wait(ctx, topics, timeout, false, func(ctx context.Context, topics []string) (pool.Popped, error) {
		return d.pool.PopN(ctx, topics, n)
	})
	if err != nil || got.Job == nil {
		return nil, err
	}
	return append([]*job.Job{got.Job}, got.Rest...), nil
}

// ackAndPop acks ack, then pops as p asks (Pop, PopParams.After).
func (d *Dispatcher) ackAndPop(ctx context.Context, ack Ack, p PopParams) ([]*job.Job, error) {
	topics, err := d.checkTopics(p.Topics)
	if err != nil {
		return nil, err
	}
	if ack, err = d.delivery(ctx, ack); err != nil {
		return nil, err
	}
	topics = d.withoutAliases(topics)
	// One script acks and pops one job of topics it shares a bucket with;
	// otherwise the ack goes alone, first: when the status refuses the pop
	// (not the ack, which finishes a reservation), for several jobs, and
	// for aliases only (nothing to pop).
	if refused := d.allow("pop", reading); refused != nil || p.Count > 0 || len(topics) == 0 {
		if err := d.pool.Ack(ctx, ack.ID, ack.Attempt, ack.Result); err != nil {
			return nil, err
		}
		switch {
		case refused != nil:
			return nil, &job.AckedError{Err: refused}
		case p.Count > 0:
			return d.popAfterAcks(ctx, p)
		}
		if err := waitOut(ctx, min(p.Timeout, d.opts.MaxPopTimeout)); err != nil {
			return nil, &job.AckedError{Err: err}
		}
		return nil, nil
	}
	got, err := d.pool.AckAndPop(ctx, ack.ID, ack.Attempt, ack.Result, topics)
	if err != nil {
		return nil, err
	}
	d.reserved(got)
	if got.Job != nil {
		if got.More {
			d.waiters.notify(got.Job.Topic, 1)
		}
		return []*job.Job{got.Job}, nil
	}
	if p.Timeout <= 0 {
		return nil, nil
	}
	got, err = d.wait(ctx, topics, p.Timeout, true, d.pool.Pop) // nothing ready: wait as a pop does
	if err != nil {
		return nil, &job.AckedError{Err: err}
	}
	if got.Job == nil {
		return nil, nil
	}
	return []*job.Job{got.Job}, nil
}

// popAfterAcks is the pop of up to p.Count jobs (at least one) that
// follows an ack that went through: its failure is a *job.AckedError, as
// the ack stands.
func (d *Dispatcher) popAfterAcks(ctx context.Context, p PopParams) ([]*job.Job, error) {
	p.After, p.Count = nil, max(p.Count, 1)
	jobs, err := d.Pop(ctx, p)
	if err != nil {
		return nil, &job.AckedError{Err: err}
	}
	return jobs, nil
}

// wait runs a pop, waiting up to timeout for a job when there is none.
// waited says the caller has just looked and found none (an ack-and-pop), so
// the first look can be skipped.
func (d *Dispatcher) wait(ctx context.Context, topics []string, timeout time.Duration, waited bool,
	pop func(context.Context, []string) (pool.Popped, error)) (pool.Popped, error) {
	if err := d.allow("pop", reading); err != nil {
		return pool.Popped{}, err
	}
	topics, err := d.checkTopics(topics)
	if err != nil {
		return pool.Popped{}, err
	}
	timeout = min(timeout, d.opts.MaxPopTimeout)
	if topics = d.withoutAliases(topics); len(topics) == 0 {
		return pool.Popped{}, waitOut(ctx, timeout)
	}
	if timeout <= 0 || !waited {
		// A job ready now needs no waiting: pop before registering as a
		// waiter (the loop below looks again after registering, so a job
		// made ready in between is not missed).
		got, err := pop(ctx, topics)
		if err != nil || got.Job != nil || timeout <= 0 {
			if err == nil {
				d.reserved(got)
			}
			if err == nil && got.More {
				d.waiters.notify(got.Last().Topic, 1)
			}
			return got, err
		}
	}
	// Waits for jobs' ends and events streams count too: the cap bounds the
	// memory of every kind of wait together (docs/operations.md).
	if n := d.waiters.len() + d.ends.len() + d.events.count(); d.opts.MaxWaiting > 0 && n >= d.opts.MaxWaiting {
		return pool.Popped{}, fmt.Errorf("%w: %d are waiting, the limit is %d ([jobs] max_waiting)", job.ErrTooManyWaiting, n, d.opts.MaxWaiting)
	}
	deadline := time.Now().Add(timeout)
	w := newWaiter(topics)
	defer func() {
		if unused := d.waiters.remove(w); unused != "" {
			d.waiters.notify(unused, 1)
		}
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	// heldBy is the topic whose limits first held this consumer back, and
	// since when: the time it waited from then on counts in the topic's stats.
	var heldBy string
	var heldSince time.Time
	defer func() {
		if heldBy != "" {
			d.noteHeld(ctx, heldBy, time.Since(heldSince))
		}
	}()
	woke := ""
	for {
		// A status enforced while it waited (a grace's end, a quiet broker)
		// ends the wait: the consumer is told why, and goes elsewhere.
		if err := d.allow("pop", reading); err != nil {
			return pool.Popped{}, err
		}
		// Register before looking, so a job made ready in between still wakes
		// us; a wake-up that came as the timer fired is this look's.
		if pending := d.waiters.add(w); pending != "" {
			woke = pending
		}
		if err := d.mark(ctx, topics, false); err != nil {
			return pool.Popped{}, err
		}
		got, err := pop(ctx, topics)
		if err != nil {
			return pool.Popped{}, err
		}
		if got.Job != nil {
			d.reserved(got)
			d.handOn(w, woke, got)
			return got, nil
		}
		if heldBy == "" && got.HeldBy != "" {
			heldBy, heldSince = got.HeldBy, time.Now()
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			return pool.Popped{}, nil
		}
		if got.PauseWait > 0 && got.WaitTopic != "" {
			// One timer a topic wakes the waiters as it opens, one at a time.
			d.waiters.notifyAfter(got.WaitTopic, got.PauseWait)
		} else if got.PauseWait > 0 {
			wait = min(wait, got.PauseWait)
		}
		timer.Reset(wait)
		select {
		case woke = <-w.wake:
		case <-timer.C:
		case <-ctx.Done():
			return pool.Popped{}, ctx.Err()
		}
	}
}

// handOn passes on wake-ups a successful pop did not use: one meant for
// another of its topics, and the news that its topic has more ready jobs.
func (d *Dispatcher) handOn(w *waiter, woke string, got pool.Popped) {
	if unused := d.waiters.remove(w); unused != "" {
		d.waiters.notify(unused, 1)
	}
	if woke != "" && woke != got.Job.Topic {
		d.waiters.notify(woke, 1)
	}
	if got.More {
		d.waiters.notify(got.Last().Topic, 1)
	}
}

// checkTopics validates a consumer's topic list and drops repeats, keeping order.
func (d *Dispatcher) checkTopics(topics []string) ([]string, error) {
	if len(topics) == 0 {
		return nil, fmt.Errorf("%w: no topic to pop from", job.ErrInvalid)
	}
	seen := make(map[string]bool, len(topics))
	out := make([]string, 0, len(topics))
	for _, t := range topics {
		if err := job.ValidateTopic(t); err != nil {
			return nil, err
		}
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out, nil
}

// waitOut is a pop from aliases only: nothing ever comes, so it waits its
// timeout (or until ctx ends) and finds nothing, as a pop of an empty topic.
func waitOut(ctx context.Context, timeout time.Duration) error {
	if timeout <= 0 {
		return nil
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
