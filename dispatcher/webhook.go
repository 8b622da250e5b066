package dispatcher

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/gmq/gmq/job"
)

// checkDelivery refuses a run-time change of a topic's HTTP push delivery
// that conf.ini would have refused at start (config.checkDelivery): a
// deliver_to whose host [webhook] allow_hosts does not list, and a
// deliver_timeout that [jobs] default_ttr does not outlast (a job would be
// delivered again while its first request is open).
func (d *Dispatcher) checkDelivery(ctx context.Context, topic string, changes job.TopicConfig) error {
	u, setsURL := changes[job.DeliverTo]
	_, setsTimeout := changes[job.DeliverTimeout]
	if !setsURL && !setsTimeout {
		return nil
	}
	if setsURL && u != "" {
		if err := d.opts.Egress.CheckURL(u); err != nil {
			return fmt.Errorf("%w: topic setting deliver_to: %v", job.ErrInvalid, err)
		}
	}
	l, err := d.pool.TopicConfig(ctx, topic)
	if err != nil {
		return err
	}
	// The settings as the change leaves them: its run layer, "" taking a
	// key back to the layers below, laid over them as the pool lays them.
	run := changes.Over(l.Run)
	for k, v := range run {
		if v == "" {
			delete(run, k)
		}
	}
	below := l.Patterns.Over(l.Defaults)
	if l.Parent != nil {
		below = l.Parent.Over(below)
	}
	if err := run.Over(l.File.Over(below)).CheckWebhookTimeout(d.opts.DefaultTTR); err != nil {
		return fmt.Errorf("topic setting %w", err)
	}
	return nil
}

// Delivering is a topic that delivers its jobs over HTTP, with its
// effective settings (deliver_secret unmasked: the deliverer signs with it).
type WebhookTopic struct {
	Topic    string
	Settings job.TopicConfig
}

// DeliveryTopics are the topics whose jobs are delivered over HTTP now, by
// name: those marked in their buckets' defaults (pool.DeliveryTopics) whose
// settings still say deliver_to. Package webhook asks every [webhook]
// scan, so a change made through any broker is taken up by all.
func (d *Dispatcher) WebhookTopics(ctx context.Context) ([]WebhookTopic, error) {
	names, err := d.pool.WebhookTopics(ctx)
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	// Read at once, sixteen at a time (rueidis pipelines them): one after
	// another, 300 delivering topics cost every broker 300 round trips a
	// scan.
	settings := make([]job.TopicLayers, len(names))
	errs := make([]error, len(names))
	slots := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i, name := range names {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			settings[i], errs[i] = d.pool.TopicConfig(ctx, name)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	out := make([]WebhookTopic, 0, len(names))
	for i, name := range names {
		if l := settings[i]; l.Effective[job.DeliverTo] != "" {
			out = append(out, WebhookTopic{Topic: name, Settings: l.Effective})
		}
	}
	return out, nil
}
