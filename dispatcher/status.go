package dispatcher

import (
	"context"

	"github.com/gmq/gmq/job"
)

// Status is the server status this broker obeys now: the one shared through
// Redis, or this broker's own if that is stricter (SIGUSR1's ReadOnly).
func (d *Dispatcher) Status() job.Status {
	return max(job.Status(d.sharedStatus.Load()), job.Status(d.localStatus.Load()))
}

// SetStatus sets the status of every broker sharing the Redis. This broker
// obeys it at once, the others within [internal] status poll.
func (d *Dispatcher) SetStatus(ctx context.Context, s job.Status) error {
	if err := d.pool.SetStatus(ctx, s); err != nil {
		return err
	}
	d.statusMu.Lock()
	d.statusSets++
	d.sharedStatus.Store(int32(s))
	d.statusMu.Unlock()
	if s < job.ReadOnly {
		d.waiters.notifyAll() // waiting pops may take jobs again
	}
	return nil
}

// SetLocalStatus makes this broker alone obey at least s (SIGUSR1: ReadOnly),
// whatever the shared status says.
func (d *Dispatcher) SetLocalStatus(s job.Status) { d.localStatus.Store(int32(s)) }

// readStatus reads the shared status (Run calls it every StatusPoll), so
// that a status set through another broker reaches this one.
func (d *Dispatcher) readStatus(ctx context.Context) {
	sets := d.statusSetsSoFar()
	rctx, cancel := context.WithTimeout(ctx, d.opts.StatusPoll)
	s, err := d.pool.Status(rctx)
	cancel()
	if err != nil {
		return // Redis away: keep the last status; the calls themselves fail meanwhile
	}
	d.polledStatus(s, sets)
}

// statusSetsSoFar is how many statuses were set through this broker.
func (d *Dispatcher) statusSetsSoFar() uint64 {
	d.statusMu.Lock()
	defer d.statusMu.Unlock()
	return d.statusSets
}

// polledStatus takes s, read from Redis when statusSetsSoFar was sets,
// unless a status was set through this broker since: that one is newer
// than what the poll read.
func (d *Dispatcher) polledStatus(s job.Status, sets uint64) {
	d.statusMu.Lock()
	defer d.statusMu.Unlock()
	if d.statusSets == sets {
		d.sharedStatus.Store(int32(s))
	}
}

// What an operation does to the queues, for the status to allow or refuse.
type opClass int

const (
	finishing opClass = iota // ack, release, bury, touch: finishing a reservation
	reading                  // pop, peek, kick, pause: working the queues
	writing                  // push, delete, flush: adding or destroying jobs
)

// allow refuses op when the status forbids its class: ReadOnly refuses
// writing, Quiescent writing and reading.
func (d *Dispatcher) allow(op string, class opClass) error {
	s := d.Status()
	if (s == job.ReadOnly && class == writing) || (s == job.Quiescent && class != finishing) {
		return &job.StatusError{Status: s, Op: op}
	}
	return nil
}
