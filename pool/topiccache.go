package pool

import "sync"

// topicCache remembers the topic of recently seen jobs, so that an operation
// on a job by number can name the job's topic keys in its first script call.
// A job's topic never changes and numbers are never reused, so an entry is
// never wrong; the oldest entries are forgotten first.
type topicCache struct {
	mu    sync.Mutex
	m     map[uint64]string
	ring  []uint64
	next  int
	limit int
}

func newTopicCache(limit int) *topicCache {
	return &topicCache{m: make(map[uint64]string, limit), ring: make([]uint64, limit), limit: limit}
}

func (c *topicCache) get(id uint64) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.m[id]
	return t, ok
}

func (c *topicCache) put(id uint64, topic string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[id]; ok {
		return
	}
	if len(c.m) >= c.limit {
		delete(c.m, c.ring[c.next])
	}
	c.m[id] = topic
	c.ring[c.next] = id
	c.next = (c.next + 1) % c.limit
}
