// Package bucket runs the timer of one bucket: it sleeps until the bucket's
// next due time (a delayed job becoming ready, a reservation running out),
// asks the store to move the due jobs, and reports which topics got jobs. It
// holds no job state; Redis does.
package bucket

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Store is what a timer needs from the job store (package pool).
type Store interface {
	// DueTopics lists up to limit topics of bucket b with due work, or says how
	// long until the next (-1: nothing scheduled).
	DueTopics(ctx context.Context, b, limit int) ([]string, time.Duration, error)
	// Tick does one batch of a due entry of bucket b (a topic's due jobs, or
	// expired jobs moving to other topics): it says how many jobs became
	// ready in which topics, and whether more is due.
	Tick(ctx context.Context, b int, topic string) (ready map[string]int, more bool, err error)
}

// Options tune a timer.
type Options struct {
	// MaxSleep caps a sleep so that jobs scheduled by another broker, which
	// cannot nudge this timer, are still moved on time within this bound.
	MaxSleep time.Duration
	// TopicsPerRound is how many due topics one look at the schedule returns.
	TopicsPerRound int
	// OnReady is told when n jobs of a topic became ready.
	OnReady func(topic string, n int)
	Log     *slog.Logger
}

// Bucket is one bucket's timer. Run it once; Nudge it from any goroutine.
type Bucket struct {
	index int
	store Store
	opts  Options
	nudge chan struct{}

	mu      sync.Mutex
	wakeAt  time.Time // when the sleeping timer fires next
	awake   bool      // a round is running: a nudge now asks for another round
	pending bool      // a nudge came during the round
}

// New returns the timer of bucket index. MaxSleep and TopicsPerRound must be
// set (the defaults are config.Default's).
func New(index int, store Store, opts Options) *Bucket {
	if opts.OnReady == nil {
		opts.OnReady = func(string, int) {}
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &Bucket{index: index, store: store, opts: opts, nudge: make(chan struct{}, 1)}
}

// Nudge tells the timer that a job of its bucket is due at `at`; it wakes
// early if it was going to sleep past that.
func (b *Bucket) Nudge(at time.Time) {
	b.mu.Lock()
	if b.awake {
		// The round may have read the schedule before this job was added.
		b.pending = true
		b.mu.Unlock()
		return
	}
	earlier := at.Before(b.wakeAt)
	if earlier {
		b.wakeAt = at
	}
	b.mu.Unlock()
	if earlier {
		select {
		case b.nudge <- struct{}{}:
		default: // a nudge is already pending; the timer re-reads wakeAt
		}
	}
}

// NextWake is when the timer fires next (for status pages).
func (b *Bucket) NextWake() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.wakeAt
}

// Run moves due jobs until ctx ends.
func (b *Bucket) Run(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	backoff := time.Duration(0)
	for {
		b.mu.Lock()
		b.awake, b.pending = true, false
		b.mu.Unlock()
		wait, err := b.round(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			backoff = min(max(2*backoff, 50*time.Millisecond), b.opts.MaxSleep)
			b.opts.Log.Warn("bucket timer: moving due jobs failed; retrying", "bucket", b.index, "in", backoff, "err", err)
			wait = backoff
		} else {
			backoff = 0
		}
		b.mu.Lock()
		if b.pending {
			wait = 0
		}
		b.awake = false
		b.wakeAt = time.Now().Add(wait)
		b.mu.Unlock()
		if !b.sleep(ctx, timer, wait) {
			return
		}
	}
}

// sleep waits for wait or an earlier nudge; false when ctx ended.
func (b *Bucket) sleep(ctx context.Context, timer *time.Timer, wait time.Duration) bool {
	timer.Reset(wait)
	for {
		select {
		case <-ctx.Done():
			return false
		case <-timer.C:
			return true
		case <-b.nudge:
			b.mu.Lock()
			until := time.Until(b.wakeAt)
			b.mu.Unlock()
			if until <= 0 {
				timer.Stop()
				return true
			}
			timer.Reset(until)
		}
	}
}

// round moves every due job of the bucket and returns how long to sleep.
func (b *Bucket) round(ctx context.Context) (time.Duration, error) {
	for {
		topics, wait, err := b.store.DueTopics(ctx, b.index, b.opts.TopicsPerRound)
		if err != nil {
			return 0, err
		}
		if len(topics) == 0 {
			if wait < 0 || wait > b.opts.MaxSleep {
				wait = b.opts.MaxSleep
			}
			return wait, nil
		}
		for _, topic := range topics {
			if err := b.drain(ctx, topic); err != nil {
				return 0, err
			}
		}
	}
}

// drain moves a topic's due jobs batch by batch.
func (b *Bucket) drain(ctx context.Context, topic string) error {
	for {
		ready, more, err := b.store.Tick(ctx, b.index, topic)
		if err != nil {
			return err
		}
		for t, n := range ready {
			b.opts.OnReady(t, n)
		}
		if !more {
			return nil
		}
	}
}
