package pool

import (
	"context"
	"sync"
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
		[]string{p.opts.Origin, topic}).Error())
}
