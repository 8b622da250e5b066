package pool

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"
)

var popBestPlainScript = newFunction("pop_best_plain")

// lateMargin is how long before its caller's deadline a one-call reserve
// is already late: one that Redis runs in the last moment before the
// deadline (as a call queued while Redis stalled can, the instant it
// thaws) would send its job after a caller that gave up, and a clock read
// in milliseconds cannot tell the deadline's own millisecond apart. Such a
// call reserves nothing; the pool's other path takes the reserve if time
// is left.
const lateMargin = 50 * time.Millisecond

// popBestPlain reserves the best job of topics spread over the buckets of
// order (groups: each bucket's topics) in one call (lua/pop_best_plain.lua),
// where PopBest's other path makes a peek call a bucket and then the pop:
// a beanstalkd reserve watching tubes in several buckets. It serves only
// where that call may name every bucket's keys, a Redis that is not a
// Cluster, and only plain topics in buckets still on the plain path. done
// false: it did not serve, or the script answered GENERAL, having changed
// nothing (its gate shut as tryPlain's would): take the other path.
func (p *Pool) popBestPlain(ctx context.Context, order []int, groups map[int][]string) (got Popped, done bool, err error) {
	if !p.oneNode.Load() {
		return Popped{}, false, nil
	}
	if err := ctx.Err(); err != nil { // the caller gave up: reserve nothing (as batcher.run skips it)
		return Popped{}, true, wrapRedis("pop", err)
	}
	now := time.Now()
	var keys, topics []string
	counts := make([]string, len(order))
	for k, b := range order {
		if !p.batchers[b].plain.open(now) {
			return Popped{}, false, nil
		}
		for _, t := range groups[b] {
			if Parent(t) != t || !p.plainTopics.open(t, now) {
				return Popped{}, false, nil
			}
		}
		keys = append(keys, p.keys.withTopics(b, groups[b]...)...)
		topics = append(topics, groups[b]...)
		counts[k] = strconv.Itoa(len(groups[b]))
	}
	p.countCall(1)
	// As a batch's call: a caller that gives up does not abandon a reserve
	// in flight, which would strand its job until its TTR. The script is
	// told the caller's deadline too: a call that Redis runs only after it
	// (queued while Redis stalled) reserves nothing.
	callCtx, cancel := batchContext([]*op{{ctx: ctx}})
	defer cancel()
	lateAfter := "0"
	if deadline, ok := ctx.Deadline(); ok {
		lateAfter = strconv.FormatInt(deadline.Add(-lateMargin).UnixMilli(), 10)
	}
	args := popBestPlainScript.args(p.caller(), "", "more", p.askMore(), "deadline", lateAfter, "counts", strings.Join(counts, ","))
	replies, err := popBestPlainScript.Exec(callCtx, p.client, keys, append(args, topics...)).ToArray()
	if crossSlot(err) {
		// A Cluster that said it is not one (behind a proxy): the buckets'
		// keys are in different slots, so this pool stops trying.
		p.oneNode.Store(false)
		return Popped{}, false, nil
	}
	if err != nil {
		return Popped{}, true, wrapRedis("pop", err)
	}
	r := decodePopBestPlainReply(replies)
	first := decodePopReply(r.Pop)
	switch first.Status {
	case "":
		return Popped{}, true, fmt.Errorf("pop_best_plain: no pop in its reply %v", replies)
	case replyGeneral:
		refusal := decodePlainRefusalReply(r.Pop)
		if refusal.Why == "late" { // by Redis's clock: the caller's, if it agrees, says so next
			if err := ctx.Err(); err != nil {
				return Popped{}, true, wrapRedis("pop", err)
			}
		}
		// A bucket's settings refusal names a topic of that bucket.
		p.shutPlainGate(refusal, p.keys.bucketOf(refusal.Topic), now)
		return Popped{}, false, nil
	case replyOK:
		if r.Bucket < 1 || int(r.Bucket) > len(order) {
			return Popped{}, true, fmt.Errorf("pop_best_plain: bucket %d of %d", r.Bucket, len(order))
		}
		if err := p.totals.add(order[r.Bucket-1], decodeBatchExtraReply(r.Totals)); err != nil {
			return Popped{}, true, err
		}
		got, err = p.popped(ctx, first)
		return got, true, err
	}
	return noOpening.popped(), true, nil // EMPTY
}

// crossSlot says whether err is Redis's refusal of a call whose keys are in
// several Cluster slots.
func crossSlot(err error) bool {
	re, ok := rueidis.IsRedisErr(err)
	return ok && strings.HasPrefix(re.Error(), "CROSSSLOT")
}
