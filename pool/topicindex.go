package pool

import (
	"context"
	"errors"
	"math"
	"strconv"

	"github.com/redis/rueidis"

	"github.com/gmq/gmq/lua"
)

// A bucket lists its topics twice, kept alike by the same scripts (lib.lua's
// add_topic and drop_topic): a set, which a push adds to and which answers
// whether a topic is known, and an index, a sorted set of the same names
// with every score 0, so that ZRANGE BYLEX reads them in byte order a page
// at a time. A page of 100 of 200,000 topics then reads the first 100 names
// of each bucket, not all 200,000 and a sort (docs/PERFORMANCE.md, "200,000
// topics").

var topicIndexScript = rueidis.NewLuaScript(lua.Source("topic_index"))

// topicIndexStep is about how many names one step of an index rebuild looks
// at: a step of a few milliseconds, as purgeStep's.
const topicIndexStep = 1000

// TopicPage lists up to limit topic names in byte order (Go's string order),
// after the first offset ones, and says how many topics there are. Past the
// end it lists none; a page near the end reads each bucket's index whole,
// as listing every topic does.
func (p *Pool) TopicPage(ctx context.Context, offset, limit int) (names []string, total int, err error) {
	c := p.client
	counts := make([]rueidis.Completed, p.opts.Buckets)
	for b := range counts {
		counts[b] = c.B().Zcard().Key(p.keys.topicIndex(b)).Build()
	}
	sizes := make([]int64, p.opts.Buckets)
	for b, res := range c.DoMulti(ctx, counts...) {
		if sizes[b], err = res.AsInt64(); err != nil {
			return nil, 0, wrapRedis("topic page", err)
		}
		total += int(sizes[b])
	}
	offset = max(offset, 0)
	if limit <= 0 || offset >= total {
		return nil, total, nil
	}
	end := offset + min(limit, total-offset) // at most total: no overflow
	// The page is within the first end names of the buckets merged, so within
	// each bucket's first end.
	var reads []rueidis.Completed
	for b, n := range sizes {
		if n > 0 {
			reads = append(reads, c.B().Zrange().Key(p.keys.topicIndex(b)).Min("-").Max("+").Bylex().
				Limit(0, min(int64(end), n)).Build())
		}
	}
	lists := make([][]string, len(reads))
	for i, res := range c.DoMulti(ctx, reads...) {
		if lists[i], err = res.AsStrSlice(); err != nil {
			return nil, 0, wrapRedis("topic page", err)
		}
	}
	merged := mergeSorted(lists, end)
	return merged[min(offset, len(merged)):], total, nil // shorter if topics went meanwhile
}

// Topics lists every topic that holds jobs (or held them and was not
// forgotten yet), in byte order.
func (p *Pool) Topics(ctx context.Context) ([]string, error) {
	names, _, err := p.TopicPage(ctx, 0, math.MaxInt)
	return names, err
}

// mergeSorted merges sorted lists into the first n names of them all, in
// order. A few lists (one per bucket): the smallest head is looked for
// among them at each step.
func mergeSorted(lists [][]string, n int) []string {
	size := 0
	for _, l := range lists {
		size += len(l)
	}
	out := make([]string, 0, min(n, size))
	for len(out) < cap(out) {
		best := -1
		for i, l := range lists {
			if len(l) > 0 && (best < 0 || l[0] < lists[best][0]) {
				best = i
			}
		}
		out = append(out, lists[best][0])
		lists[best] = lists[best][1:]
	}
	return out
}

// checkTopicIndex rebuilds the index of every bucket whose index does not
// count as many names as its set: data written by a gmq that kept no index
// (or by one started on this data since). Init runs it.
func (p *Pool) checkTopicIndex(ctx context.Context) error {
	c := p.client
	cmds := make([]rueidis.Completed, 0, 2*p.opts.Buckets)
	for b := range p.opts.Buckets {
		cmds = append(cmds, c.B().Scard().Key(p.keys.topics(b)).Build(), c.B().Zcard().Key(p.keys.topicIndex(b)).Build())
	}
	res := c.DoMulti(ctx, cmds...)
	for b := range p.opts.Buckets {
		inSet, err1 := res[2*b].AsInt64()
		inIndex, err2 := res[2*b+1].AsInt64()
		if err := errors.Join(err1, err2); err != nil {
			return wrapRedis("init: topic index", err)
		}
		if inSet != inIndex {
			if err := p.rebuildTopicIndex(ctx, b); err != nil {
				return err
			}
		}
	}
	return nil
}

// rebuildTopicIndex makes bucket b's index hold its set's names, in bounded
// steps (topic_index.lua): every name of the set is indexed, then every
// indexed name the set does not hold is dropped. Topics that come or go
// meanwhile keep both alike themselves.
func (p *Pool) rebuildTopicIndex(ctx context.Context, b int) error {
	keys := []string{p.keys.topics(b), p.keys.topicIndex(b)}
	step := strconv.Itoa(topicIndexStep)
	for _, phase := range []struct{ mode, first, done string }{{"add", "0", "0"}, {"prune", "-", ""}} {
		for from := phase.first; ; {
			next, err := topicIndexScript.Exec(ctx, p.client, keys, []string{phase.mode, from, step}).ToString()
			if err != nil {
				return wrapRedis("init: topic index of bucket "+strconv.Itoa(b), err)
			}
			if next == phase.done {
				break
			}
			from = next
		}
	}
	return nil
}
