package pool

import (
	"context"
	"errors"
	"math"
	"slices"
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
	var heads []indexHead
	for b, res := range c.DoMulti(ctx, counts...) {
		n, err := res.AsInt64()
		if err != nil {
			return nil, 0, wrapRedis("topic page", err)
		}
		if n > 0 {
			heads = append(heads, indexHead{bucket: b})
		}
		total += int(n)
	}
	offset = max(offset, 0)
	if limit <= 0 || offset >= total {
		return nil, total, nil
	}
	end := offset + min(limit, total-offset) // at most total: no overflow
	// Names hash evenly over the buckets, so each holds about its share of
	// the first end: read a little more than that from each, then more from
	// those that fell short, until the first end names of all are read.
	step := end/len(heads) + end/(4*len(heads)) + 16
	for {
		done, err := p.readHeads(ctx, heads, step)
		if err != nil {
			return nil, 0, err
		}
		if done || firstRead(heads) >= end {
			break
		}
		step = min(2*step, end)
	}
	lists := make([][]string, len(heads))
	for i, h := range heads {
		lists[i] = h.names
	}
	merged := mergeSorted(lists, end)
	return merged[min(offset, len(merged)):], total, nil // shorter if topics went meanwhile
}

// indexHead is the first names of a bucket's topic index, read so far.
type indexHead struct {
	bucket int
	names  []string // in order
	whole  bool     // the index holds no more
}

// readHeads reads up to step more names of each index not read whole, in
// one round trip, and says whether all are now read whole.
func (p *Pool) readHeads(ctx context.Context, heads []indexHead, step int) (done bool, err error) {
	c := p.client
	var reads []rueidis.Completed
	var which []int
	for i, h := range heads {
		if h.whole {
			continue
		}
		from := "-"
		if len(h.names) > 0 {
			from = "(" + h.names[len(h.names)-1] // after the last read: names that come meanwhile do not shift it
		}
		reads = append(reads, c.B().Zrange().Key(p.keys.topicIndex(h.bucket)).Min(from).Max("+").Bylex().
			Limit(0, int64(step)).Build())
		which = append(which, i)
	}
	done = true
	for k, res := range c.DoMulti(ctx, reads...) {
		got, err := res.AsStrSlice()
		if err != nil {
			return false, wrapRedis("topic page", err)
		}
		h := &heads[which[k]]
		h.names, h.whole = append(h.names, got...), len(got) < step
		done = done && h.whole
	}
	return done, nil
}

// firstRead is how many of the first names of all the buckets are read: all
// those up to the least last name read of an index not read whole (any
// name not read comes after it).
func firstRead(heads []indexHead) int {
	bound, bounded := "", false
	for _, h := range heads {
		if !h.whole && (!bounded || h.names[len(h.names)-1] < bound) {
			bound, bounded = h.names[len(h.names)-1], true
		}
	}
	n := 0
	for _, h := range heads {
		i, found := len(h.names), false
		if bounded {
			i, found = slices.BinarySearch(h.names, bound)
		}
		if found {
			i++
		}
		n += i
	}
	return n
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
// (or by one started on this data since). Init runs it. An older gmq still
// running on the data (a rolling upgrade) makes topics the index misses
// until a broker starts after it stopped; pool.Check reports them.
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
			next, err := topicIndexScript.Exec(ctx, p.client, keys, lua.Args("topic_index "+phase.mode, "from", from, "n", step)).ToString()
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
