package pool

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/rueidis"

	"github.com/gmq/gmq/job"
)

// fanoutCache remembers each parent topic's fanout children as a push
// script last named them. It may be stale (another broker's client
// referenced a new child, or deleted one): the push script compares it with
// the bucket's fanout hash every time and refuses a push whose list is not
// the current one ('CHILDREN', with the current list), so a stale entry costs
// a retry, never a copy missed or misplaced. Only parents that have children
// are kept.
type fanoutCache struct {
	mu       sync.Mutex
	children map[string][]string
}

func (c *fanoutCache) get(parent string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.children[parent]
}

func (c *fanoutCache) set(parent string, children []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(children) == 0 {
		delete(c.children, parent)
		return
	}
	if c.children == nil {
		c.children = map[string][]string{}
	}
	c.children[parent] = children
}

// forget drops a deleted child from its parent's list.
func (c *fanoutCache) forget(child string) {
	parent := Parent(child)
	if parent == child {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var kept []string
	for _, name := range c.children[parent] {
		if name != child {
			kept = append(kept, name)
		}
	}
	if len(kept) == 0 {
		delete(c.children, parent)
	} else {
		c.children[parent] = kept
	}
}

// reference lists a fanout child under its parent (a reference that runs
// no other topic script: reading or changing its settings).
func (p *Pool) reference(ctx context.Context, topic string) error {
	if Parent(topic) == topic {
		return nil
	}
	b := p.keys.bucketOf(topic)
	return wrapRedis("reference "+topic, referenceScript.Exec(ctx, p.client, p.keys.withTopics(b, topic),
		referenceScript.args(p.caller(), "", "topic", topic)).Error())
}

// defaultMaxFanout is a topic's max_fanout when it is not set (lib_topics.lua's
// DEFAULT_MAX_FANOUT).
const defaultMaxFanout = 64

// checkChildren refuses, naming the limit, an operation that would make a
// topic of topics a new fanout child past its parent's max_fanout, or by a
// read (byRead: a pop, a peek) when the parent's fanout_on_read is false.
// The scripts hold the same limits (lib.lua reference), race-free; a child
// they decline is silently an ordinary topic, so this check is what tells
// the client. A child already listed costs nothing: the pool's list of its
// parent's children says so, refreshed here when it did not.
func (p *Pool) checkChildren(ctx context.Context, topics []string, byRead bool) error {
	for _, topic := range topics {
		if err := p.checkChild(ctx, topic, byRead); err != nil {
			return err
		}
	}
	return nil
}

func (p *Pool) checkChild(ctx context.Context, topic string, byRead bool) error {
	parent := Parent(topic)
	if parent == topic || slices.Contains(p.fanout.get(parent), topic) {
		return nil
	}
	c := p.client
	list, err := c.Do(ctx, c.B().Hget().Key(p.keys.buckets[p.keys.bucketOf(parent)].fanout).Field(parent).Build()).ToString()
	if err != nil && !rueidis.IsRedisNil(err) {
		return wrapRedis("fanout children", err)
	}
	children := strings.Fields(list)
	if slices.Contains(children, topic) {
		p.fanout.set(parent, children)
		return nil
	}
	// A new child: its parent's settings decide (a parent has no '+', so
	// reading them references nothing).
	settings, err := p.TopicConfig(ctx, parent)
	if err != nil {
		return err
	}
	if byRead && settings.Effective["fanout_on_read"] == "false" {
		return fmt.Errorf("%q: %w: its parent %q makes no fanout child by a read (fanout_on_read = false); "+
			"push to it, or set it up through its settings, to make it a child", topic, job.ErrInvalid, parent)
	}
	most := int64(defaultMaxFanout)
	if v := settings.Effective["max_fanout"]; v != "" {
		if most, err = strconv.ParseInt(v, 10, 64); err != nil {
			return fmt.Errorf("fanout of %q: max_fanout %q: %w", parent, v, err)
		}
	}
	if most > 0 && int64(len(children)) >= most {
		return fmt.Errorf("%q: %w: its parent %q has %d fanout children, its max_fanout", topic, job.ErrInvalid, parent, len(children))
	}
	return nil
}
