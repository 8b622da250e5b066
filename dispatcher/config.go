package dispatcher

import (
	"context"
	"fmt"
	"time"

	"github.com/gmq/gmq/job"
)

// Config reads a topic's settings, layer by layer (defaults, its
// conf.ini section, run-time changes) and the effective result.
func (tp Topic) Config(ctx context.Context) (job.TopicLayers, error) {
	topic := tp.name
	if err := job.ValidateTopic(topic); err != nil {
		return job.TopicLayers{}, err
	}
	l, err := tp.d.pool.TopicConfig(ctx, topic)
	if err != nil {
		return l, err
	}
	return job.TopicLayers{Defaults: l.Defaults.Masked(), File: l.File.Masked(), Run: l.Run.Masked(),
		Effective: l.Effective.Masked(), Patterns: l.Patterns.Masked(), Parent: l.Parent.Masked()}, nil
}

// SetConfig changes a topic's settings at run time, for every broker
// sharing the Redis at once; a key set to "" goes back to conf.ini's value.
// ReadOnly and Quiescent refuse it.
func (tp Topic) SetConfig(ctx context.Context, changes job.TopicConfig) error {
	topic := tp.name
	if err := tp.d.allow("topic config", writing); err != nil {
		return err
	}
	if err := job.ValidateTopic(topic); err != nil {
		return err
	}
	checked := make(job.TopicConfig, len(changes))
	for k, v := range changes {
		c, err := job.CheckTopicSetting(k, v)
		if err != nil {
			return err
		}
		checked[k] = c
	}
	if err := tp.d.checkDelivery(ctx, topic, checked); err != nil {
		return err
	}
	if err := tp.d.pool.SetTopicConfig(ctx, topic, checked); err != nil {
		return err
	}
	// A limit raised or lifted lets the consumers it held back take jobs
	// now: wake them, here and on every broker (best-effort: at worst they
	// wait for their next look).
	tp.d.waiters.notify(topic, tp.d.waiters.len())
	if err := tp.d.pool.WakeEveryone(ctx, topic); err != nil {
		tp.d.log.Debug("wake the consumers of a topic whose settings changed", "topic", topic, "err", err)
	}
	return nil
}

// ApplyTopicConfig writes conf.ini's topic settings for every broker (at
// start and at reload); run-time changes stay over them. Groups parked
// under a group_* setting that changed come back (pool.ApplyTopicConfig).
func (d *Dispatcher) ApplyTopicConfig(ctx context.Context, defaults job.TopicConfig, topics map[string]job.TopicConfig) error {
	if err := d.pool.ApplyTopicConfig(ctx, defaults, topics); err != nil {
		return fmt.Errorf("topic settings: %w", err)
	}
	d.rememberTopicConfig(defaults, topics)
	d.waiters.notifyAll() // a limit may have been raised: its waiters look again
	return nil
}

// noteHeld adds the time a consumer's pop was held back by a topic's limits
// to the topic's stats: one round trip before the answer of a pop that was
// held back (it waited anyway), best-effort (a failure is only logged: the
// consumer's pop stands).
func (d *Dispatcher) noteHeld(ctx context.Context, topic string, held time.Duration) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	if err := d.pool.NoteHeld(ctx, topic, held); err != nil {
		d.log.Debug("note the time a pop was held back", "topic", topic, "err", err)
	}
}
