package dispatcher

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/gmq/gmq/job"
)

// EventTypes are the events a topic with events = true streams.
var EventTypes = []string{"pushed", "reserved", "progress", "stalled", "completed", "failed", "dead", "cancelled", "expired"}

// ErrEventsLagging ends a stream whose consumer fell behind its buffer:
// it may connect again with its last event's id and catch up from the
// buckets' streams, as long as they still hold it.
var ErrEventsLagging = errors.New("the consumer fell behind the events: connect again with the last event's id")

// eventBuffer is how many events a stream holds for its consumer before
// it is ended as lagging: each is at most about 1.3 KiB (its detail is cut
// at 1 KiB), so a stream holds well under 100 KiB whatever the consumer.
const eventBuffer = 64

// eventBlock is how long a bucket's reader waits for new events in one
// read before it looks again whether it still has subscribers.
const eventBlock = 5 * time.Second

// EventsParams are what a stream of events sends: the events of Topics,
// of Types (all of EventTypes when empty), from From (bucket -> the id
// of the last event its consumer had; a bucket left out: from now).
type EventsParams struct {
	Topics []string
	Types  []string
	From   map[int]string
	// Send is given each event, the positions after it (bucket -> last
	// id, for the consumer to resume from), and, with a nil event, a
	// heartbeat every Heartbeat (or a notice: Lost names buckets whose
	// streams no longer hold the position asked for). An error ends the
	// stream.
	Send      func(ev *job.Event, positions map[int]string, lost []int) error
	Heartbeat time.Duration
}

// eventSub is one stream's place in the buckets' readers.
type eventSub struct {
	topics, types map[string]bool
	ch            chan job.Event
	lagged        chan struct{} // closed when its buffer was full
	lagOnce       sync.Once
}

// bucketReader reads one bucket's events for the streams that want them:
// one reader a bucket on this broker, however many streams, started with
// the first stream and stopped after the last.
type bucketReader struct {
	subs   map[*eventSub]bool
	cancel context.CancelFunc
	last   string // the id of the last event offered to subs (held under the hub's lock)
}

// eventHub holds this broker's bucket readers.
type eventHub struct {
	mu      sync.Mutex
	readers map[int]*bucketReader
	streams int
}

func newEventHub() *eventHub { return &eventHub{readers: make(map[int]*bucketReader)} }

// Events streams the events p asks for to p.Send until ctx ends (it then
// returns ctx's error), Send fails (its error), or the consumer falls
// behind (ErrEventsLagging). It counts in max_waiting. Streams end when
// the dispatcher stops.
func (d *Dispatcher) Events(ctx context.Context, p EventsParams) error {
	if err := d.allow("stream events", reading); err != nil {
		return err
	}
	if len(p.Topics) == 0 {
		return fmt.Errorf("%w: give at least one topic", job.ErrInvalid)
	}
	sub := &eventSub{topics: map[string]bool{}, types: map[string]bool{}, ch: make(chan job.Event, eventBuffer), lagged: make(chan struct{})}
	buckets := map[int]bool{}
	for _, t := range p.Topics {
		if err := job.ValidateTopic(t); err != nil {
			return err
		}
		sub.topics[t] = true
		buckets[d.pool.EventsBucket(t)] = true
	}
	for _, ty := range p.Types {
		if !slices.Contains(EventTypes, ty) {
			return fmt.Errorf("%w: unknown event type %q (%v)", job.ErrInvalid, ty, EventTypes)
		}
		sub.types[ty] = true
	}
	if n := d.waiters.len() + d.ends.len() + d.events.count(); d.opts.MaxWaiting > 0 && n >= d.opts.MaxWaiting {
		return fmt.Errorf("%w: %d are waiting, the limit is %d ([jobs] max_waiting)", job.ErrTooManyWaiting, n, d.opts.MaxWaiting)
	}
	// Where each bucket starts: the position asked for, or now. A position
	// the stream no longer holds is said (lost), and the stream goes on
	// from its first event.
	pos, lasts := map[int]string{}, map[int]string{}
	var lost []int
	for b := range buckets {
		first, last, err := d.pool.EventBounds(ctx, b)
		if err != nil {
			return err
		}
		lasts[b] = orZero(last)
		from, asked := p.From[b]
		switch {
		case !asked:
			pos[b] = orZero(last)
		case first != "" && job.CompareEventIDs(from, first) < 0 && job.CompareEventIDs(from, "0-0") > 0:
			lost = append(lost, b)
			pos[b] = "0-0"
		default:
			pos[b] = from
		}
	}
	slices.Sort(lost)
	if err := d.events.add(d, sub, lasts); err != nil {
		return err
	}
	defer d.events.remove(sub, buckets)
	// The stream begins at once (the consumer learns it is in place), with
	// what was lost, if anything.
	if err := p.Send(nil, copyPositions(pos), lost); err != nil {
		return err
	}
	// Catch up on each bucket from its position, then go on with what the
	// reader hands over (skipping what the catch-up sent).
	deliver := func(ev job.Event) error {
		if job.CompareEventIDs(ev.ID, pos[ev.Bucket]) <= 0 || !sub.wants(ev) {
			return nil
		}
		pos[ev.Bucket] = ev.ID
		return p.Send(&ev, copyPositions(pos), nil)
	}
	for b := range buckets {
		for {
			evs, err := d.pool.ReadEvents(ctx, b, pos[b], 100, 0)
			if err != nil {
				return err
			}
			for _, ev := range evs {
				if err := deliver(ev); err != nil {
					return err
				}
			}
			if len(evs) < 100 {
				break
			}
		}
	}
	beat := p.Heartbeat
	if beat <= 0 {
		beat = 15 * time.Second
	}
	ticker := time.NewTicker(beat)
	defer ticker.Stop()
	for {
		select {
		case ev := <-sub.ch:
			if err := deliver(ev); err != nil {
				return err
			}
		case <-ticker.C:
			d.events.advance(sub, pos) // past what it did not want, so a resume does not find it lost
			if err := p.Send(nil, copyPositions(pos), nil); err != nil {
				return err
			}
		case <-sub.lagged:
			return ErrEventsLagging
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// wants says whether ev is one of the stream's.
func (s *eventSub) wants(ev job.Event) bool {
	return s.topics[ev.Topic] && (len(s.types) == 0 || s.types[ev.Type])
}

// offer hands ev to the stream, or, its buffer full, marks it lagging.
func (s *eventSub) offer(ev job.Event) {
	select {
	case s.ch <- ev:
	default:
		s.lagOnce.Do(func() { close(s.lagged) })
	}
}

// advance moves a stream's positions up to what its buckets' readers have
// offered, when it holds none of it unsent: every event up to there that
// it wanted it has sent, and the rest it did not want. A consumer that
// wants few events of busy buckets then resumes without being told lost.
func (h *eventHub) advance(sub *eventSub, pos map[int]string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(sub.ch) > 0 {
		return
	}
	for b, at := range pos {
		if r := h.readers[b]; r != nil && job.CompareEventIDs(r.last, at) > 0 {
			pos[b] = r.last
		}
	}
}

func (h *eventHub) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.streams
}

// add registers sub with the readers of its buckets (bucket -> its
// stream's last event id, as the stream read it just before), starting
// those that do not run yet from there: no Redis call under the hub's lock
// (a stream that missed an event in between catches up by its position).
func (h *eventHub) add(d *Dispatcher, sub *eventSub, lasts map[int]string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	base := d.runCtx()
	if base == nil {
		return fmt.Errorf("%w: the broker is not running", job.ErrUnavailable)
	}
	for b, last := range lasts {
		r := h.readers[b]
		if r == nil {
			ctx, cancel := context.WithCancel(base)
			r = &bucketReader{subs: map[*eventSub]bool{}, cancel: cancel, last: last}
			h.readers[b] = r
			go h.read(ctx, d, b, last, r)
		}
		r.subs[sub] = true
	}
	h.streams++
	return nil
}

// remove takes sub off its buckets' readers, stopping those left with none.
func (h *eventHub) remove(sub *eventSub, buckets map[int]bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for b := range buckets {
		if r := h.readers[b]; r != nil {
			delete(r.subs, sub)
			if len(r.subs) == 0 {
				r.cancel()
				delete(h.readers, b)
			}
		}
	}
	h.streams--
}

// read is bucket b's reader: it reads the bucket's events after last and
// offers each to the streams that want it, until ctx ends (its last stream
// left, or the dispatcher stopped). A read that fails is tried again
// after a pause; the streams catch up by position when they reconnect.
func (h *eventHub) read(ctx context.Context, d *Dispatcher, b int, last string, r *bucketReader) {
	for ctx.Err() == nil {
		evs, err := d.pool.ReadEvents(ctx, b, last, 100, eventBlock)
		if err != nil {
			if ctx.Err() == nil {
				d.log.Debug("reading events failed", "bucket", b, "err", err)
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
			}
			continue
		}
		if len(evs) == 0 {
			continue
		}
		last = evs[len(evs)-1].ID
		h.mu.Lock()
		for sub := range r.subs {
			for _, ev := range evs {
				if sub.wants(ev) {
					sub.offer(ev)
				}
			}
		}
		r.last = last
		h.mu.Unlock()
	}
}

// runCtx is Run's context while Run runs, else nil.
func (d *Dispatcher) runCtx() context.Context {
	if ctx := d.running.Load(); ctx != nil {
		return *ctx
	}
	return nil
}

func orZero(id string) string {
	if id == "" {
		return "0-0"
	}
	return id
}

func copyPositions(pos map[int]string) map[int]string {
	out := make(map[int]string, len(pos))
	for b, id := range pos {
		out[b] = id
	}
	return out
}
