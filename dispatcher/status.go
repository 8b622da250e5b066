package dispatcher

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gmq/gmq/job"
	"github.com/gmq/gmq/pool"
)

// A broker's server status is the strictest of three layers (kestrel's
// ServerStatus, per server, with gmq's fleet-wide one as its floor):
//   - the fleet's, set for every broker sharing the Redis;
//   - the broker's own, set for it by name through any broker ([server]
//     default_status at boot);
//   - its signals' (SIGUSR1 drains it to ReadOnly at once; SIGTSTP quiets
//     it to Quiescent), which no API lifts.
//
// A stricter status set with a grace period ([server] status_grace) is
// announced at once (Status: the API, kestrel's status, metrics,
// /readyz) and enforced from the end of the grace (allow), timed on
// Redis's clock so that every broker enforces a fleet change together.

// ServerStatus is this broker's status: its layers, what it announces
// and enforces, and who is told of a change. One of the dispatcher's
// concerns, apart from its core (Dispatcher.Status).
type ServerStatus struct{ d *Dispatcher }

// Status is this broker's status.
func (d *Dispatcher) Status() ServerStatus { return ServerStatus{d} }

// statusState holds the layers, their times on this machine's clock.
type statusState struct {
	mu sync.Mutex
	// sets orders the layers' writes: a status set here (counted) wins over
	// a poll that read Redis before it.
	sets                uint64
	fleet, own, signals job.StatusLayer
	brokers             map[string]job.StatusLayer // every broker's own, as last read
	timer               *time.Timer                // wakes recompute at the next pending At
	timerOff            bool                       // Run has ended: no timer is set again (stopStatusTimer)
	announced, enforced atomic.Int32               // job.Status, recomputed on every change
	watchers            []func(job.Status)         // told each new announced status (OnChange)
	lastAnnounced       job.Status
	offset              time.Duration // this machine's clock less Redis's, at the last read
	stopping            atomic.Bool   // the broker is shutting down (ServerStatus.Stopping)
}

// Announced is the status this broker announces: the strictest of its
// layers, a stricter one pending its grace period included.
func (ss ServerStatus) Announced() job.Status {
	return job.Status(ss.d.status.announced.Load())
}

// Enforced is the status this broker obeys now.
func (ss ServerStatus) Enforced() job.Status {
	return job.Status(ss.d.status.enforced.Load())
}

// StatusView is the status and the layers it comes from.
type StatusView struct {
	Announced, Enforced job.Status
	At                  time.Time // when Announced is enforced (zero: it is)
	Broker              string    // this broker's origin
	Fleet, Own, Signals job.StatusLayer
	Brokers             map[string]job.StatusLayer // every broker's own layer, by origin, as last read
	Stopping            bool
}

// View reports the status, its layers and every broker's own.
func (ss ServerStatus) View() StatusView {
	st := &ss.d.status
	st.mu.Lock()
	defer st.mu.Unlock()
	v := StatusView{Announced: ss.Announced(), Enforced: ss.Enforced(), Broker: ss.d.pool.Origin(),
		Fleet: st.fleet, Own: st.own, Signals: st.signals, Brokers: make(map[string]job.StatusLayer, len(st.brokers)),
		Stopping: st.stopping.Load()}
	for name, l := range st.brokers {
		v.Brokers[name] = l
	}
	v.Brokers[v.Broker] = st.own
	if v.Announced > v.Enforced {
		for _, l := range []job.StatusLayer{st.fleet, st.own, st.signals} {
			if l.Announced() == v.Announced && l.Pending(time.Now()) && (v.At.IsZero() || l.At.Before(v.At)) {
				v.At = l.At
			}
		}
	}
	return v
}

// Set sets the status of every broker sharing the Redis: a looser
// one (or as strict) at once, a stricter one after [server] status_grace.
// This broker obeys it at once, the others within [internal] status_poll
// (a grace's end together, on Redis's clock).
func (ss ServerStatus) Set(ctx context.Context, s job.Status) error {
	return ss.set(ctx, pool.StatusScope{}, s)
}

// SetBroker sets one broker's own status (broker: its origin; "this"
// for this one; "": the fleet's, as Set): it obeys the stricter of it and
// the fleet's. A broker with no record is job.ErrNotFound: only a broker
// records itself, at boot (Init).
func (ss ServerStatus) SetBroker(ctx context.Context, broker string, s job.Status) error {
	return ss.set(ctx, pool.StatusScope{Broker: ss.origin(broker)}, s)
}

// origin is broker's origin as the store knows it: "this" is this
// broker's, "" the fleet's.
func (ss ServerStatus) origin(broker string) string {
	if broker == "this" {
		return ss.d.pool.Origin()
	}
	return broker
}

// set sets the layer scope names to s and takes it up here at once.
func (ss ServerStatus) set(ctx context.Context, scope pool.StatusScope, s job.Status) error {
	layer, redisNow, err := ss.d.pool.SetStatus(ctx, scope, s, ss.d.opts.StatusGrace)
	if err != nil {
		return err
	}
	layer = onThisClock(layer, redisNow)
	st := &ss.d.status
	st.mu.Lock()
	st.sets++
	st.offset = time.Since(redisNow)
	switch scope.Broker {
	case "":
		st.fleet = layer
	case ss.d.pool.Origin():
		st.own = layer
	default:
		if st.brokers == nil {
			st.brokers = map[string]job.StatusLayer{}
		}
		st.brokers[scope.Broker] = layer
	}
	st.mu.Unlock()
	ss.d.recomputeStatus()
	return nil
}

// Init records this broker's own status at boot ([server]
// default_status, at once) and reads every layer.
func (ss ServerStatus) Init(ctx context.Context) error {
	if err := ss.set(ctx, pool.StatusScope{Broker: ss.d.pool.Origin(), Create: true}, ss.d.opts.DefaultStatus); err != nil {
		return err
	}
	ss.d.readStatus(ctx)
	return nil
}

// SetLocal makes this broker alone obey at least s at once, whatever
// its other layers say (SIGUSR1: ReadOnly).
func (ss ServerStatus) SetLocal(s job.Status) {
	ss.d.status.mu.Lock()
	ss.d.status.signals = job.StatusLayer{Now: max(s, ss.d.status.signals.Now), Next: max(s, ss.d.status.signals.Next)}
	ss.d.status.mu.Unlock()
	ss.d.recomputeStatus()
}

// Quiet makes this broker Quiescent for good (SIGTSTP, as Sidekiq's quiet):
// announced at once (so /readyz turns load balancers away), enforced after
// [server] status_grace: no new jobs are taken while those in hand are
// finished (ack, release, touch go on).
func (ss ServerStatus) Quiet() {
	ss.d.status.mu.Lock()
	l := &ss.d.status.signals
	if l.Announced() < job.Quiescent {
		l.Next = job.Quiescent
		if l.At = time.Now().Add(ss.d.opts.StatusGrace); ss.d.opts.StatusGrace <= 0 {
			l.Now, l.At = job.Quiescent, time.Time{}
		}
	}
	ss.d.status.mu.Unlock()
	ss.d.recomputeStatus()
}

// Stopping marks the broker as shutting down: /readyz answers 503 from now.
func (ss ServerStatus) Stopping() {
	ss.d.status.stopping.Store(true)
}

// IsStopping says the broker is shutting down.
func (ss ServerStatus) IsStopping() bool {
	return ss.d.status.stopping.Load()
}

// OnChange calls fn with each new announced status, from the goroutine
// that changed it (fn must not block), starting with the current one.
func (ss ServerStatus) OnChange(fn func(job.Status)) {
	ss.d.status.mu.Lock()
	ss.d.status.watchers = append(ss.d.status.watchers, fn)
	ss.d.status.mu.Unlock()
	fn(ss.Announced())
}

// readStatus reads every layer (Run calls it every StatusPoll), so that a
// status set through another broker reaches this one, and renews this
// broker's record.
func (d *Dispatcher) readStatus(ctx context.Context) {
	st := &d.status
	st.mu.Lock()
	sets, own, offset := st.sets, st.own, st.offset
	st.mu.Unlock()
	rctx, cancel := context.WithTimeout(ctx, max(d.opts.StatusPoll, time.Second))
	read, err := d.pool.Status(rctx, onRedisClock(own, offset))
	cancel()
	if err != nil {
		return // Redis away: keep the last status; the calls themselves fail meanwhile
	}
	d.polledStatus(read, sets)
}

// polledStatus takes read, read from Redis when the sets so far were sets,
// unless a status was set through this broker since: that one is newer.
func (d *Dispatcher) polledStatus(read pool.StatusRead, sets uint64) {
	st := &d.status
	st.mu.Lock()
	if st.sets == sets {
		st.offset = time.Since(read.Now)
		st.fleet = onThisClock(read.Fleet, read.Now)
		st.brokers = make(map[string]job.StatusLayer, len(read.Brokers))
		for name, l := range read.Brokers {
			st.brokers[name] = onThisClock(l, read.Now)
		}
		if mine, ok := st.brokers[d.pool.Origin()]; ok {
			st.own = mine
		}
		delete(st.brokers, d.pool.Origin())
	}
	st.mu.Unlock()
	d.recomputeStatus()
}

// recomputeStatus derives the announced and enforced statuses from the
// layers, wakes waiting consumers when the enforced one changed (a
// Quiescent one ends their waits; a looser one lets them look again), tells
// the watchers of a new announced one, and sets the timer for the next
// pending grace's end.
func (d *Dispatcher) recomputeStatus() {
	st := &d.status
	st.mu.Lock()
	now := time.Now()
	var announced, enforced job.Status
	var next time.Time
	for _, l := range []job.StatusLayer{st.fleet, st.own, st.signals} {
		announced, enforced = max(announced, l.Announced()), max(enforced, l.Enforced(now))
		if l.Pending(now) && (next.IsZero() || l.At.Before(next)) {
			next = l.At
		}
	}
	if st.timer != nil {
		st.timer.Stop()
		st.timer = nil
	}
	if !next.IsZero() && !st.timerOff {
		st.timer = time.AfterFunc(time.Until(next), d.recomputeStatus)
	}
	st.announced.Store(int32(announced))
	changed := job.Status(st.enforced.Swap(int32(enforced))) != enforced
	var tell []func(job.Status)
	newlyAnnounced := announced != st.lastAnnounced
	if newlyAnnounced {
		st.lastAnnounced, tell = announced, st.watchers
	}
	st.mu.Unlock()
	// Logged once a change, so that a probe's 503 (/readyz) need not be.
	if newlyAnnounced || changed {
		args := []any{"announced", announced, "enforced", enforced}
		if !next.IsZero() {
			args = append(args, "grace_ends", next.Format(time.RFC3339Nano))
		}
		d.log.Info("server status", args...)
	}
	if changed {
		d.waiters.notifyAll()
	}
	for _, fn := range tell {
		fn(announced)
	}
}

// onThisClock moves a layer's time from Redis's clock (read at redisNow)
// to this machine's.
func onThisClock(l job.StatusLayer, redisNow time.Time) job.StatusLayer {
	if !l.At.IsZero() {
		l.At = time.Now().Add(l.At.Sub(redisNow))
	}
	return l
}

// onRedisClock is onThisClock's inverse, for a layer sent to Redis: offset
// is how far this machine's clock was ahead of Redis's at the last read.
func onRedisClock(l job.StatusLayer, offset time.Duration) job.StatusLayer {
	if !l.At.IsZero() {
		l.At = l.At.Add(-offset)
	}
	return l
}

// What an operation does to the queues, for the status to allow or refuse.
type opClass int

const (
	finishing opClass = iota // ack, release, bury, touch: finishing a reservation
	reading                  // pop, peek, kick, pause: working the queues
	writing                  // push, delete, flush: adding or destroying jobs
)

// allow refuses op when the enforced status forbids its class: ReadOnly
// refuses writing, Quiescent writing and reading.
func (d *Dispatcher) allow(op string, class opClass) error {
	s := d.Status().Enforced()
	if (s == job.ReadOnly && class == writing) || (s == job.Quiescent && class != finishing) {
		return &job.StatusError{Status: s, Op: op}
	}
	return nil
}

// stopStatusTimer stops the timer of the next pending grace's end, for
// good: Run, which owns it, has ended, and nothing it would wake runs.
func (d *Dispatcher) stopStatusTimer() {
	st := &d.status
	st.mu.Lock()
	defer st.mu.Unlock()
	st.timerOff = true
	if st.timer != nil {
		st.timer.Stop()
		st.timer = nil
	}
}
