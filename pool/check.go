package pool

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/redis/rueidis"

	"github.com/gmq/gmq/job"
	"github.com/gmq/gmq/lua"
)

var checkScript = newFunction("check")

// Check verifies that every job is in exactly one state: each stored job is in
// exactly one of its topic's sets, the one its record names, the bucket
// counters agree with the sets, and each bucket's topic index lists the
// names of its topics set. It reads topic by topic, so run it while no job
// moves (tests, or an idle deployment); it returns what it found wrong.
func (p *Pool) Check(ctx context.Context) ([]string, error) {
	names, problems, err := p.checkTopicLists(ctx)
	if err != nil {
		return nil, err
	}
	perBucket := make([][stateSets]int64, p.opts.Buckets)
	for _, topic := range names {
		b := p.keys.bucketOf(topic)
		r, err := checkScript.Exec(ctx, p.client, p.keys.withTopics(b, topic), checkScript.args(p.caller(), "", "topic", topic)).ToArray()
		if err != nil {
			return nil, wrapRedis("check", err)
		}
		checked := decodeCheckReply(r)
		for i, n := range checked.counts() {
			perBucket[b][i] += n
		}
		for _, problem := range checked.Problems {
			problems = append(problems, fmt.Sprintf("topic %q: %s", topic, problem))
		}
	}
	for b := range p.opts.Buckets {
		problems = append(problems, p.checkBucket(ctx, b, perBucket[b])...)
	}
	return problems, nil
}

// checkTopicLists reads each bucket's topics set and its index and says
// where they disagree. It returns the sets' names (what the index should
// hold, so not read from it).
func (p *Pool) checkTopicLists(ctx context.Context) (names, problems []string, err error) {
	c := p.client
	cmds := make([]rueidis.Completed, 0, 2*p.opts.Buckets)
	for b := range p.opts.Buckets {
		cmds = append(cmds, c.B().Smembers().Key(p.keys.topics(b)).Build(),
			c.B().Zrange().Key(p.keys.topicIndex(b)).Min("0").Max("-1").Build())
	}
	res := c.DoMulti(ctx, cmds...)
	for b := range p.opts.Buckets {
		set, err1 := res[2*b].AsStrSlice()
		index, err2 := res[2*b+1].AsStrSlice()
		if err := errors.Join(err1, err2); err != nil {
			return nil, nil, wrapRedis("check", err)
		}
		slices.Sort(set)
		if lost, extra := without(set, index), without(index, set); len(lost)+len(extra) > 0 {
			problems = append(problems, fmt.Sprintf("bucket %d: its topic index lacks %d of its topics (%s) and lists %d it does not hold (%s)",
				b, len(lost), firstFew(lost), len(extra), firstFew(extra)))
		}
		names = append(names, set...)
	}
	return names, problems, nil
}

// without is the names of a that b does not hold (both sorted).
func without(a, b []string) []string {
	var out []string
	for _, s := range a {
		if _, found := slices.BinarySearch(b, s); !found {
			out = append(out, s)
		}
	}
	return out
}

// firstFew quotes up to five names.
func firstFew(names []string) string {
	if len(names) > 5 {
		return fmt.Sprintf("%q…", names[:5])
	}
	return fmt.Sprintf("%q", names)
}

// eventsBound is the most entries a bucket's events stream holds: lib.lua's
// EVENTS_MAXLEN, and the node of entries (stream-node-max-entries, 100)
// an approximate trim may leave.
const eventsBound = 10000 + 100

// stateSets is how many states have a set of their own (job.Stored, 1 to
// Waiting; lua.States but EXPIRED, which is last): check.lua counts their
// members in that order.
const stateSets = int(job.Waiting)

// counts are the members of each state's set, in job.Stored's order.
func (r checkReply) counts() [stateSets]int64 {
	return [...]int64{r.Delayed, r.Ready, r.Reserved, r.Buried, r.Dead, r.Completed, r.Cancelled, r.Waiting}
}

// checkBucket compares a bucket's record and body counts and its counters
// with the members counted in its topics' sets (delayed, ready, reserved,
// buried, dead, completed: lua.States' order) and its outbox (expired jobs
// on their way to expire_to).
func (p *Pool) checkBucket(ctx context.Context, b int, sets [stateSets]int64) []string {
	k := p.keys.buckets[b]
	res := p.client.DoMulti(ctx,
		p.client.B().Hlen().Key(k.jobs).Build(),
		p.client.B().Hlen().Key(k.bodies).Build(),
		p.client.B().Hgetall().Key(k.stats).Build(),
		p.client.B().Zcard().Key(k.outbox).Build(),
		p.client.B().Xlen().Key(k.events).Build())
	records, err1 := res[0].AsInt64()
	bodies, err2 := res[1].AsInt64()
	counters, err3 := res[2].AsIntMap()
	outbox, err4 := res[3].AsInt64()
	events, err5 := res[4].AsInt64()
	for _, err := range []error{err1, err2, err3, err4, err5} {
		if err != nil {
			return []string{fmt.Sprintf("bucket %d: %v", b, err)}
		}
	}
	var problems []string
	var total int64
	for _, n := range sets {
		total += n
	}
	// Bodies of format 1 and long ones are in the bodies hash, the others
	// in their records (format.go); check.lua checks each job has one.
	if records != total+outbox || bodies > records {
		problems = append(problems, fmt.Sprintf("bucket %d: %d records and %d bodies, %d jobs in sets and %d in the outbox",
			b, records, bodies, total, outbox))
	}
	// The events stream is trimmed as it grows (XADD MAXLEN ~ 10000):
	// approximately, a node of entries (100) at a time.
	if events > eventsBound {
		problems = append(problems, fmt.Sprintf("bucket %d: its events stream holds %d entries, over its bound of about 10,000", b, events))
	}
	for i, s := range lua.States[:stateSets] {
		if field := s.Counter; counters[field] != sets[i] {
			problems = append(problems, fmt.Sprintf("bucket %d: %s says %d, the sets hold %d", b, field, counters[field], sets[i]))
		}
	}
	problems = append(problems, p.checkFollowUps(ctx, b)...)
	return append(problems, p.checkBatches(ctx, b)...)
}

// checkFollowUps says where bucket b's follow-ups disagree: each listed
// has its spec and each spec is listed, and the timer is told of them (the
// due zset's FOLLOWUPS_DUE no later than the soonest).
func (p *Pool) checkFollowUps(ctx context.Context, b int) []string {
	list, specs := p.keys.buckets[b].followups, p.keys.buckets[b].followupSpecs
	res := p.client.DoMulti(ctx,
		p.client.B().Zrange().Key(list).Min("0").Max("-1").Withscores().Build(),
		p.client.B().Hkeys().Key(specs).Build(),
		p.client.B().Zscore().Key(p.keys.buckets[b].due).Member(followupsDue).Build())
	listed, err1 := res[0].AsZScores()
	kept, err2 := res[1].AsStrSlice()
	due, err3 := res[2].AsFloat64()
	if rueidis.IsRedisNil(err3) {
		due, err3 = -1, nil
	}
	if err := errors.Join(err1, err2, err3); err != nil {
		return []string{fmt.Sprintf("bucket %d: follow-ups: %v", b, err)}
	}
	var problems []string
	ids := make([]string, len(listed))
	for i, z := range listed {
		ids[i] = z.Member
	}
	slices.Sort(ids)
	kept = slices.DeleteFunc(kept, func(f string) bool { return strings.HasPrefix(f, "#tries ") }) // a refused one's count
	slices.Sort(kept)
	if lost, extra := without(ids, kept), without(kept, ids); len(lost)+len(extra) > 0 {
		problems = append(problems, fmt.Sprintf("bucket %d: %d follow-ups listed without their spec (%s), %d specs not listed (%s)",
			b, len(lost), firstFew(lost), len(extra), firstFew(extra)))
	}
	if len(listed) > 0 && (due < 0 || due > listed[0].Score) {
		problems = append(problems, fmt.Sprintf("bucket %d: %d follow-ups, the soonest due at %.0f, and the timer told of them at %.0f (-1: never)",
			b, len(listed), listed[0].Score, due))
	}
	return problems
}
