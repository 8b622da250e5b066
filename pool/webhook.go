package pool

import (
	"context"
	"strings"

	"github.com/redis/rueidis"
)

// deliverMark starts a bucket defaults' field that names a topic of the
// bucket with deliver_to in its own layers ("@deliver orders"): settings.lua
// keeps it as it writes a topic's layer, so the brokers find the topics
// that deliver over HTTP by reading each bucket's defaults, and no other
// topic pays anything for the feature.
const deliverMark = "@deliver "

// DeliveryTopics names the topics marked as delivering over HTTP, every
// bucket's defaults read at once (one round trip, rueidis pipelining them).
func (p *Pool) WebhookTopics(ctx context.Context) ([]string, error) {
	cmds := make([]rueidis.Completed, len(p.keys.buckets))
	for b, k := range p.keys.buckets {
		cmds[b] = p.client.B().Hgetall().Key(k.defaults).Build()
	}
	var topics []string
	for _, r := range p.client.DoMulti(ctx, cmds...) {
		fields, err := r.AsStrMap()
		if err != nil {
			return nil, wrapRedis("delivery topics", err)
		}
		for f := range fields {
			if t, ok := strings.CutPrefix(f, deliverMark); ok {
				topics = append(topics, t)
			}
		}
	}
	return topics, nil
}
