package pool

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/gmq/gmq/job"
)

// purgeStep is the most jobs one purge script call removes: a step measured
// in milliseconds (docs/PERFORMANCE.md), so flushing a million-job topic
// never holds Redis for long.
const purgeStep = 500

// Purge removes every job of a topic in the given states (Ready, Delayed,
// Reserved, Buried, Dead), in bounded steps, and returns how many it removed.
// A removed reserved job's consumer finds it gone (an ack answers not
// found). Each step is one script, so a purge cut short (a crash, Redis
// gone) leaves fewer jobs, each in one state, and running it again
// finishes it.
func (p *Pool) Purge(ctx context.Context, topic string, states ...job.State) (int, error) {
	names := make([]string, len(states))
	for i, s := range states {
		if !s.IsStored() {
			return 0, fmt.Errorf("purge %q: %w: no jobs are %s", topic, job.ErrInvalid, s)
		}
		names[i] = setName(s)
	}
	b := p.keys.bucketOf(topic)
	keys := p.keys.withTopics(b, topic)
	args := purgeScript.args(p.caller(), "", "topic", topic, "n", strconv.Itoa(purgeStep), "states", strings.Join(names, ","))
	removed := 0
	for {
		reply, err := purgeScript.Exec(ctx, p.client, keys, args).ToArray()
		if err != nil {
			return removed, wrapRedis("purge", err)
		}
		purged := decodePurgeReply(reply)
		n := int(purged.Removed)
		removed += n
		p.dropAliases(ctx, purged.Dropped)
		if n < purgeStep {
			return removed, nil
		}
	}
}

// expireStep is the most expiry entries one expire script call looks at.
const expireStep = 1000

// FlushExpired expires every job of a topic whose time ran out, now, in
// bounded steps (kestrel's flush_expired; the bucket timers do it anyway,
// max_expire_sweep at a time), and returns how many it expired.
func (p *Pool) FlushExpired(ctx context.Context, topic string) (int, error) {
	b := p.keys.bucketOf(topic)
	keys := p.keys.withTopics(b, topic)
	args := expireScript.args(p.caller(), "", "topic", topic, "n", strconv.Itoa(expireStep))
	expired := 0
	for {
		reply, err := expireScript.Exec(ctx, p.client, keys, args).ToArray()
		if err != nil {
			return expired, wrapRedis("flush expired", err)
		}
		swept := decodeExpireReply(reply)
		expired += int(swept.Expired)
		p.dropAliases(ctx, swept.Dropped)
		if swept.Looked < expireStep {
			return expired, nil
		}
	}
}

// DeleteTopic removes every job of a topic, in any state, and then the topic
// itself: its pause and its totals. It returns how many jobs it removed.
func (p *Pool) DeleteTopic(ctx context.Context, topic string) (int, error) {
	n, err := p.Purge(ctx, topic, job.Stored...)
	if err != nil {
		return n, err
	}
	return n, p.forgetDeletedTopic(ctx, topic)
}

// forgetDeletedTopic is a delete's second step, after its purge: the topic
// loses its run-time settings and its place as a fanout child, and is
// forgotten if it is still empty. A push may come between the two steps;
// its job stays, under conf.ini's settings, but the settings go all the
// same (they stayed, the delete answering 200, when the script dropped
// them only from an empty topic).
func (p *Pool) forgetDeletedTopic(ctx context.Context, topic string) error {
	b := p.keys.bucketOf(topic)
	if err := forgetTopicScript.Exec(ctx, p.client, p.keys.withTopics(b, topic), forgetTopicScript.args(p.caller(), "", "topic", topic, "force", "force")).Error(); err != nil {
		return wrapRedis("delete topic", err)
	}
	p.totals.forget(b, p.keys.info(b, topic)) // its totals went with it
	p.fanout.forget(topic)                    // a deleted child stops getting copies
	return nil
}
