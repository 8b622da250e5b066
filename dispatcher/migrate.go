package dispatcher

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gmq/gmq/pool"
)

// migration moves format 1's bodies into their records once the store is
// raised to format 2 (pool/migrate.go): Run calls migrate every StatusPoll,
// and each call makes one bounded step in each bucket whose pass is not
// over. It begins MigrateAfter after this broker first saw the new format:
// every broker has written in it by then (each learns the format at its
// next record, and a record lasts pool.DefaultAnnounceTTL), so one pass
// over each bucket finds every body written the old way. Every broker
// migrates (a step is one script, and a body moves once); the first to
// finish records it in gmq:meta and the others stop.
type migration struct {
	mu      sync.Mutex // held through a call of migrate
	format  int        // the format being migrated to (0: none)
	seen    time.Time  // when this broker first saw the store at it
	cursors []string   // each bucket's HSCAN cursor ("0": from the start)
	passed  []bool     // the bucket's pass is over
	lastLog time.Time

	moved atomic.Int64 // bodies this broker moved
	done  atomic.Int64 // the format whose migration this broker knows has ended
}

// Migration says the store's format as this broker last read it, whether
// its migration is over, and how many bodies this broker moved.
func (d *Dispatcher) Migration() (format int, done bool, moved int64) {
	f := d.pool.Format()
	return f, f <= 1 || d.migration.done.Load() >= int64(f), d.migration.moved.Load()
}

func (d *Dispatcher) migrate(ctx context.Context) {
	m := &d.migration
	m.mu.Lock()
	defer m.mu.Unlock()
	f := d.pool.Format()
	if f < 2 || m.done.Load() >= int64(f) {
		return
	}
	if m.format != f {
		n := d.pool.Buckets()
		m.format, m.seen = f, time.Now()
		m.cursors, m.passed = make([]string, n), make([]bool, n)
		for b := range m.cursors {
			m.cursors[b] = "0"
		}
	}
	after := d.opts.MigrateAfter
	if after <= 0 {
		after = pool.DefaultAnnounceTTL
	}
	rctx, cancel := context.WithTimeout(ctx, max(d.opts.StatusPoll, time.Second))
	defer cancel()
	if got, err := d.pool.Migrated(rctx); err != nil || got >= f {
		if err == nil {
			m.done.Store(int64(f)) // a fresh store, or another broker finished it
		}
		return
	}
	if time.Since(m.seen) < after {
		return
	}
	if m.lastLog.IsZero() {
		m.lastLog = time.Now()
		d.log.Info("store migration begins: moving format 1's short bodies into their records", "format", f, "buckets", len(m.cursors))
	}
	left := 0
	for b := range m.cursors {
		if m.passed[b] {
			continue
		}
		next, n, err := d.pool.MigrateStep(rctx, b, m.cursors[b])
		if err != nil {
			d.log.Warn("store migration: a step failed; trying again", "format", f, "bucket", b, "err", err)
			return
		}
		m.moved.Add(n)
		m.cursors[b] = next
		if next == "0" {
			m.passed[b] = true
		} else {
			left++
		}
	}
	if left > 0 {
		if time.Since(m.lastLog) >= 10*time.Second {
			m.lastLog = time.Now()
			d.log.Info("store migration under way: moving bodies into their records", "format", f,
				"buckets_left", left, "buckets", len(m.cursors), "bodies_moved", m.moved.Load())
		}
		return
	}
	if err := d.pool.SetMigrated(rctx, f); err != nil {
		d.log.Warn("store migration: recording its end failed; trying again", "err", err)
		return
	}
	m.done.Store(int64(f))
	d.log.Info("store migrated", "format", f, "bodies_moved", m.moved.Load())
}
