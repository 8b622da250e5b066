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
			tag := p.keys.tag(b)
			held := int64(0)
			for _, set := range []string{"ready", "delayed", "reserved", "buried"} {
				n, err := c.Do(ctx, c.B().Zcard().Key(tag+":"+set+":"+t).Build()).AsInt64()
				if err != nil {
					return wrapRedis("init: placement", err)
				}
				held += n
			}
			if held > 0 {
				stuck = append(stuck, fmt.Sprintf("%s (%d jobs)", t, held))
				continue
			}
			for _, cmd := range []string{tag + ":topic:" + t, tag + ":expires:" + t} {
				if err := c.Do(ctx, c.B().Del().Key(cmd).Build()).Error(); err != nil {
					return wrapRedis("init: placement", err)
				}
			}
			if err := c.Do(ctx, c.B().Srem().Key(p.keys.topics(b)).Member(t).Build()).Error(); err != nil {
				return wrapRedis("init: placement", err)
			}
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

// moveConfigs moves the settings hashes of topics with a '+' to their new bucket.
func (p *Pool) moveConfigs(ctx context.Context) error {
	c := p.client
	names, err := c.Do(ctx, c.B().Smembers().Key(p.keys.configured()).Build()).AsStrSlice()
	if err != nil {
		return wrapRedis("init: placement", err)
	}
	for _, t := range names {
		old := p.keys.tag(p.keys.hash(t)) + ":config:" + t
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
