package config

import (
	"fmt"

	"github.com/gmq/gmq/internal/egress"
	"github.com/gmq/gmq/job"
)

// WebhookPolicy is [webhook] allow_hosts as the broker checks it (HTTP
// push delivery off when empty). It was parsed once by Load, so it does not fail here.
func (c *Config) WebhookPolicy() *egress.Policy {
	p, err := egress.Parse(c.WebhookAllowHosts)
	if err != nil {
		return &egress.Policy{} // unreachable after Load; off, to be safe
	}
	return p
}

// checkWebhooks refuses what a start should not get past: a topic-only
// setting (deliver_to, deliver_secret) in [topics] or a pattern, whose
// topics the brokers could not find by their marks; and a [topic.NAME]
// deliver_to that allow_hosts does not allow, said at start rather than as
// a topic that never delivers; and a deliver_timeout the default TTR does
// not outlast.
func (c *Config) checkWebhooks() error {
	for _, k := range job.TopicOnly {
		if _, ok := c.TopicDefaults[k]; ok {
			return fmt.Errorf("[topics] %s: a setting of a topic's own ([topic.NAME]), not of every topic's", k)
		}
		for name, t := range c.Topics {
			if _, ok := t[k]; ok && job.IsTopicPattern(name) {
				return fmt.Errorf("[topic.%s] %s: a setting of one topic's own, not of a pattern's", name, k)
			}
		}
	}
	return c.CheckWebhooksAgainst(c.WebhookPolicy())
}

// CheckWebhooksAgainst checks each [topic.NAME]'s push delivery against policy:
// its own allow_hosts at load, and at a reload the one the broker started
// with (allow_hosts takes effect at a start), so that a reload cannot
// write a deliver_to its broker would refuse to call.
func (c *Config) CheckWebhooksAgainst(policy *egress.Policy) error {
	for name, t := range c.Topics {
		if u := t[job.DeliverTo]; u != "" {
			if err := policy.CheckURL(u); err != nil {
				return fmt.Errorf("[topic.%s] deliver_to: %w", name, err)
			}
			if err := t.Over(c.TopicDefaults).CheckWebhookTimeout(c.DefaultTTR); err != nil {
				return fmt.Errorf("[topic.%s] %w", name, err)
			}
		}
	}
	return nil
}
