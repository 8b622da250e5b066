package pool

import (
	"context"
	"fmt"

	"github.com/redis/rueidis"

	"github.com/gmq/gmq/lua"
)

var checkScript = rueidis.NewLuaScriptReadOnly(lua.Source("check"))

// Check verifies that every job is in exactly one state: each stored job is in
// exactly one of its topic's sets, the one its record names, and the bucket
// counters agree with the sets. It reads topic by topic, so run it while no
// job moves (tests, or an idle deployment); it returns what it found wrong.
func (p *Pool) Check(ctx context.Context) ([]string, error) {
	names, err := p.Topics(ctx)
	if err != nil {
		return nil, err
	}
	perBucket := make([][5]int64, p.opts.Buckets)
	var problems []string
	for _, topic := range names {
		b := p.keys.bucketOf(topic)
		r, err := checkScript.Exec(ctx, p.client, p.keys.withTopics(b, topic), []string{p.opts.Origin, topic}).ToArray()
		if err != nil {
			return nil, wrapRedis("check", err)
		}
		for i := range 5 {
			perBucket[b][i] += intAt(r, i)
		}
		for i := 5; i < len(r); i++ {
			problems = append(problems, fmt.Sprintf("topic %q: %s", topic, strAt(r, i)))
		}
	}
	for b := range p.opts.Buckets {
		problems = append(problems, p.checkBucket(ctx, b, perBucket[b])...)
	}
	return problems, nil
}

// checkBucket compares a bucket's record and body counts and its counters
// with the members counted in its topics' sets (delayed, ready, reserved,
// buried) and its outbox (expired jobs on their way to expire_to).
func (p *Pool) checkBucket(ctx context.Context, b int, sets [5]int64) []string {
	k := p.keys.buckets[b]
	res := p.client.DoMulti(ctx,
		p.client.B().Hlen().Key(k.jobs).Build(),
		p.client.B().Hlen().Key(k.bodies).Build(),
		p.client.B().Hgetall().Key(k.stats).Build(),
		p.client.B().Zcard().Key(k.outbox).Build())
	records, err1 := res[0].AsInt64()
	bodies, err2 := res[1].AsInt64()
	counters, err3 := res[2].AsIntMap()
	outbox, err4 := res[3].AsInt64()
	for _, err := range []error{err1, err2, err3, err4} {
		if err != nil {
			return []string{fmt.Sprintf("bucket %d: %v", b, err)}
		}
	}
	var problems []string
	total := sets[0] + sets[1] + sets[2] + sets[3] + sets[4]
	if records != total+outbox || bodies != total+outbox {
		problems = append(problems, fmt.Sprintf("bucket %d: %d records and %d bodies, %d jobs in sets and %d in the outbox",
			b, records, bodies, total, outbox))
	}
	for i, field := range []string{"cur_delayed", "cur_ready", "cur_reserved", "cur_buried", "cur_dead"} {
		if counters[field] != sets[i] {
			problems = append(problems, fmt.Sprintf("bucket %d: %s says %d, the sets hold %d", b, field, counters[field], sets[i]))
		}
	}
	return problems
}
