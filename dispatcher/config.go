package dispatcher

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gmq/gmq/job"
	"github.com/gmq/gmq/pool"
)

// TopicConfig reads a topic's settings, layer by layer (defaults, its
// conf.ini section, run-time changes) and the effective result.
func (d *Dispatcher) TopicConfig(ctx context.Context, topic string) (pool.TopicLayers, error) {
	if err := job.ValidateTopic(topic); err != nil {
		return pool.TopicLayers{}, err
	}
	return d.pool.TopicConfig(ctx, topic)
}

// SetTopicConfig changes a topic's settings at run time, for every broker
// sharing the Redis at once; a key set to "" goes back to conf.ini's value.
// ReadOnly and Quiescent refuse it.
func (d *Dispatcher) SetTopicConfig(ctx context.Context, topic string, changes job.TopicConfig) error {
	if err := d.allow("topic config", writing); err != nil {
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
	if err := d.pool.SetTopicConfig(ctx, topic, checked); err != nil {
		return err
	}
	for k := range checked {
		if strings.HasPrefix(k, "group_") { // groups parked under the old limits go back in the ring
			if _, err := d.pool.UnparkGroups(ctx, topic); err != nil {
				return err
			}
			break
		}
	}
	// A limit raised or lifted lets the consumers it held back take jobs
	// now: wake them, here and on every broker (best-effort: at worst they
	// wait for their next look).
	d.waiters.notify(topic, d.waiters.len())
	if err := d.pool.WakeEveryone(ctx, topic); err != nil {
		d.log.Debug("wake the consumers of a topic whose settings changed", "topic", topic, "err", err)
	}
	return nil
}

// ApplyTopicConfig writes conf.ini's topic settings for every broker (at
// start and at reload); run-time changes stay over them.
func (d *Dispatcher) ApplyTopicConfig(ctx context.Context, defaults job.TopicConfig, topics map[string]job.TopicConfig) error {
	d.watch.mu.Lock()
	oldDefaults, oldTopics := d.watch.defaults, d.watch.topics
	d.watch.mu.Unlock()
	if err := d.pool.ApplyTopicConfig(ctx, defaults, topics); err != nil {
		return fmt.Errorf("topic settings: %w", err)
	}
	d.rememberTopicConfig(defaults, topics)
	if err := d.unparkChanged(ctx, oldDefaults, oldTopics, defaults, topics); err != nil {
		return fmt.Errorf("topic settings: %w", err)
	}
	d.waiters.notifyAll() // a limit may have been raised: its waiters look again
	return nil
}

// unparkChanged lets parked groups back into their rings where a reload
// changed a group_* setting, as a run-time change does (SetTopicConfig): a
// group parked under the old group_rate would wait out its old token. A
// topic's own section changed: that topic; [topics] or a pattern section
// changed: every topic (a reload is rare, and a topic that is not grouped
// answers at once).
func (d *Dispatcher) unparkChanged(ctx context.Context, oldDefaults job.TopicConfig, oldTopics map[string]job.TopicConfig,
	defaults job.TopicConfig, topics map[string]job.TopicConfig) error {
	changed, all := []string{}, !sameGroupSettings(oldDefaults, defaults)
	for _, name := range slices.Sorted(maps.Keys(joinKeys(oldTopics, topics))) {
		if sameGroupSettings(oldTopics[name], topics[name]) {
			continue
		}
		if strings.Contains(name, "*") {
			all = true
		}
		changed = append(changed, name)
	}
	if all {
		var err error
		if changed, err = d.pool.Topics(ctx); err != nil {
			return err
		}
	}
	// Sixteen topics at once (rueidis pipelines their calls): a reload that
	// touched [topics] on a store of 100,000 topics made one round trip each.
	errs := make([]error, len(changed))
	slots := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i, topic := range changed {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			_, errs[i] = d.pool.UnparkGroups(ctx, topic)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// sameGroupSettings says a and b set the group_* settings alike.
func sameGroupSettings(a, b job.TopicConfig) bool {
	for k, v := range a {
		if strings.HasPrefix(k, "group_") && b[k] != v {
			return false
		}
	}
	for k, v := range b {
		if strings.HasPrefix(k, "group_") && a[k] != v {
			return false
		}
	}
	return true
}

// joinKeys is the set of a's and b's names.
func joinKeys(a, b map[string]job.TopicConfig) map[string]bool {
	out := make(map[string]bool, len(a)+len(b))
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
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
