package dispatcher

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gmq/gmq/internal/jobjson"
	"github.com/gmq/gmq/job"
	"github.com/gmq/gmq/pool"
)

// storeWatch notices a Redis that lost gmq's data while this broker ran
// (restarted empty, or a failover to an empty replica): the pool's epoch
// changed. The jobs are gone and nothing brings them back, but the broker
// must say so, loudly, and make the store whole again: its meta record, and
// the topic settings of conf.ini, which every bucket keeps a copy of.
type storeWatch struct {
	losses   atomic.Int64
	lastLoss atomic.Int64 // Unix ms

	mu      sync.Mutex // held through a check, which a reload's rememberTopicConfig waits for
	pending bool       // the loss is seen but the store not yet made whole again
	tooNew  bool       // the store's format is newer than this broker reads (announce)
	// defaults and topics are the topic settings last applied, and
	// schedules conf.ini's schedules (their file layers), to apply again.
	defaults  job.TopicConfig
	topics    map[string]job.TopicConfig
	schedules map[string]jobjson.Fields
}

// StoreLosses says how many times this broker has seen Redis lose gmq's
// data, and when last (zero if never).
func (d *Dispatcher) StoreLosses() (int64, time.Time) {
	n := d.watch.losses.Load()
	if n == 0 {
		return 0, time.Time{}
	}
	return n, time.UnixMilli(d.watch.lastLoss.Load())
}

// rememberTopicConfig keeps the topic settings ApplyTopicConfig wrote, for
// checkStore to write again.
func (d *Dispatcher) rememberTopicConfig(defaults job.TopicConfig, topics map[string]job.TopicConfig) {
	d.watch.mu.Lock()
	defer d.watch.mu.Unlock()
	d.watch.defaults, d.watch.topics = defaults, topics
}

// rememberSchedules keeps conf.ini's schedules ApplySchedules wrote, for
// checkStore to write again.
func (d *Dispatcher) rememberSchedules(file map[string]jobjson.Fields) {
	d.watch.mu.Lock()
	defer d.watch.mu.Unlock()
	d.watch.schedules = file
}

// checkStore looks for a lost store (Run calls it every StatusPoll): it logs
// the loss as an error and counts it, then records the store anew (Init,
// which adopts an epoch another broker recorded first) and writes conf.ini's
// topic settings and schedules again; a step that fails is tried again next
// time, without counting the loss twice. Run-time topic settings, and
// schedules made at run time (PUT), are lost with the data, as jobs are.
func (d *Dispatcher) checkStore(ctx context.Context) {
	rctx, cancel := context.WithTimeout(ctx, max(d.opts.StatusPoll, time.Second))
	defer cancel()
	d.watch.mu.Lock()
	defer d.watch.mu.Unlock()
	a, err := d.announce(rctx) // one look at gmq:meta for the format and the epoch
	if !d.watch.pending {
		if err != nil || !d.pool.EpochChanged(a) {
			return // Redis away (the calls themselves fail meanwhile), or a newer store (refused)
		}
		d.watch.pending = true
		d.watch.lastLoss.Store(time.Now().UnixMilli())
		d.watch.losses.Add(1)
		d.log.Error("Redis lost gmq's data: its meta record is gone or was made anew since this broker started; "+
			"the jobs it held are gone. Job numbers go on above the lost ones, so consumers' late acks of lost jobs answer not found. "+
			"Recording the store anew and writing conf.ini's topic settings and schedules again (run-time settings and schedules are lost); "+
			"turn on AOF (appendonly yes) so a restart keeps the jobs", "old_epoch", d.pool.Epoch())
	}
	if err := d.pool.Init(rctx); err != nil {
		d.log.Error("Redis lost gmq's data: recording the store anew failed; retrying", "err", err)
		return
	}
	if err := d.pool.ApplyTopicConfig(rctx, d.watch.defaults, d.watch.topics); err != nil {
		d.log.Error("Redis lost gmq's data: writing the topic settings again failed; retrying", "err", err)
		return
	}
	if d.watch.schedules == nil {
		// None applied yet (a dispatcher without conf.ini): none to restore.
	} else if err := d.applySchedules(rctx, d.watch.schedules); err != nil {
		d.log.Error("Redis lost gmq's data: writing conf.ini's schedules again failed; retrying", "err", err)
		return
	}
	d.watch.pending = false
	d.log.Warn("store recorded anew after the data loss", "epoch", d.pool.Epoch())
}

// announce renews this broker's record in the store (pool/format.go), which
// lets the store's format be raised only when every broker reads the new
// one. A store found newer than this broker reads (its record lapsed while
// it was paused, and a newer broker raised the format) makes the pool
// refuse every call; that is logged once, and its end too.
func (d *Dispatcher) announce(ctx context.Context) (pool.Announced, error) {
	a, err := d.pool.Announce(ctx)
	tooNew := errors.Is(err, pool.ErrStoreTooNew)
	if tooNew && !d.watch.tooNew {
		d.log.Error("refusing every request: a newer broker raised the store's format while this one was not recorded; "+
			"stop this broker and upgrade it", "err", err)
	} else if !tooNew && d.watch.tooNew {
		d.log.Warn("the store's format is one this broker reads again")
	}
	if err == nil || tooNew {
		d.watch.tooNew = tooNew
	}
	return a, err
}
