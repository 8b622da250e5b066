package pool

import (
	"context"
	"fmt"
	"strings"

	"github.com/gmq/gmq/job"
)

// placementParent is gmq:meta's "placement" once topics are placed by their
// parent's name (a fanout child in its parent's bucket). Data written before
// placed every topic by its whole name, so only topics with a '+' moved.
const placementParent = "parent"

// checkPlacement moves data written under the old placement to the new one,
// once: the empty topics with a '+' are forgotten where they were (their
// counters with them) and their settings moved; one that still holds jobs
// stops the start, since a job's number names its bucket and cannot move.
func (p *Pool) checkPlacement(ctx context.Context) error {
	c := p.client
	got, err := c.Do(ctx, c.B().Hget().Key(p.keys.meta()).Field("placement").Build()).ToString()
	if err == nil && got == placementParent {
		return nil
	}
	var stuck []string
	for b := range p.opts.Buckets {
		names, err := c.Do(ctx, c.B().Smembers().Key(p.keys.topics(b)).Build()).AsStrSlice()
		if err != nil {
			return wrapRedis("init: placement", err)
		}
		for _, t := range names {
			if !strings.Contains(t, "+") || p.keys.bucketOf(t) == b {
				continue
			}
			// Forgotten where it is (one script: it checks the topic is empty
			// and drops it, as a delete does), or, holding jobs, it stops the start.
			keys := p.keys.withTopicIn(b, t)
			forgot, err := forgetTopicScript.Exec(ctx, c, keys, forgetTopicScript.args(p.caller(), "", "topic", t, "force", "force")).AsInt64()
			if err != nil {
				return wrapRedis("init: placement", err)
			}
			if forgot == 1 {
				continue
			}
			counts, err := checkScript.Exec(ctx, c, keys, checkScript.args(p.caller(), "", "topic", t)).ToArray()
			if err != nil {
				return wrapRedis("init: placement", err)
			}
			c := decodeCheckReply(counts)
			held := c.Delayed + c.Ready + c.Reserved + c.Buried + c.Dead
			stuck = append(stuck, fmt.Sprintf("%s (%d jobs)", t, held))
		}
	}
	if len(stuck) > 0 {
		return fmt.Errorf("init: %w: topics named with a '+' are now fanout children, kept in their parent's bucket; "+
			"these hold jobs in their old bucket: %s (run the previous gmq until they are empty, or flush them)",
			job.ErrInvalid, strings.Join(stuck, ", "))
	}
	if err := p.moveConfigs(ctx); err != nil {
		return err
	}
	return wrapRedis("init: placement", c.Do(ctx, c.B().Hset().Key(p.keys.meta()).FieldValue().
		FieldValue("placement", placementParent).Build()).Error())
}

// moveConfigs moves the settings hashes of topics with a '+' to their new
// bucket. The two hashes live in different slots, so it cannot be one
// script: it copies, then deletes the old one, and a start cut short between
// the two copies it again (the same fields) at the next start.
func (p *Pool) moveConfigs(ctx context.Context) error {
	c := p.client
	names, err := c.Do(ctx, c.B().Smembers().Key(p.keys.configured()).Build()).AsStrSlice()
	if err != nil {
		return wrapRedis("init: placement", err)
	}
	for _, t := range names {
		old := p.keys.configIn(p.keys.hash(t), t)
		if !strings.Contains(t, "+") || old == p.keys.config(t) {
			continue
		}
		fields, err := c.Do(ctx, c.B().Hgetall().Key(old).Build()).AsStrMap()
		if err != nil {
			return wrapRedis("init: placement", err)
		}
		if len(fields) > 0 {
			cmd := c.B().Hset().Key(p.keys.config(t)).FieldValue()
			for f, v := range fields {
				cmd = cmd.FieldValue(f, v)
			}
			if err := c.Do(ctx, cmd.Build()).Error(); err != nil {
				return wrapRedis("init: placement", err)
			}
		}
		if err := c.Do(ctx, c.B().Del().Key(old).Build()).Error(); err != nil {
			return wrapRedis("init: placement", err)
		}
	}
	return nil
}
