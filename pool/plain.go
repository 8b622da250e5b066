package pool

// Issue 50's plain path: a call that carries one plain push, reserve, ack,
// or ack then reserve, alone runs a small function of its own (lua/*_plain.lua),
// a straight run of the data model's commands, where batch.lua's would run
// its operations, phases and per-call tables: about a third less of Redis's
// time a job's life (docs/PERFORMANCE.md, "The plain path").

import (
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/gmq/gmq/lua"
)

var (
	pushPlainScript   = newFunction("push_plain")
	popPlainScript    = newFunction("pop_plain")
	ackPlainScript    = newFunction("ack_plain")
	ackPopPlainScript = newFunction("ack_pop_plain")
)

// plainCall is an operation's call on the plain path: its script, the
// script's named arguments (lua.ScriptArgs), and the topics whose keys it
// takes, in order, each once. A push's arguments are read from its batch
// operation's (push) only when the call is made: most pushes go in
// batches, and never need them.
type plainCall struct {
	script *function
	args   []string
	topics []string
	push   []string
}

// named is the call's named arguments.
func (c *plainCall) named() []string {
	if c.push == nil {
		return c.args
	}
	named := make([]string, 0, 2+2*len(pushPlainFrom))
	named = append(named, "topic", c.topics[0])
	for i, name := range pushPlainNames {
		named = append(named, name, c.push[pushPlainFrom[i]])
	}
	return named
}

// plainRetry is how long a bucket whose plain call answered that it has
// settings (GENERAL settings) runs its calls through batch.lua before it
// tries again, and a topic whose pop answered that it is paused or may
// hold expired jobs (GENERAL topic) does: a bucket or topic that uses a
// feature pays one call for nothing that often. A topic unpaused takes the
// plain path again after it; a bucket whose settings were all removed does
// not, as the marks in its defaults hash stay (settings.lua).
const plainRetry = 10 * time.Second

// plainTopicsMost bounds the topics remembered as off the plain path: past
// it they are all forgotten (each then pays one call for nothing again).
const plainTopicsMost = 4096

// pushPlainNames are push_plain's arguments after its topic, and
// pushPlainFrom where each is in a batch push's (lua.OpArgs): a plain push
// takes them from there.
var (
	pushPlainNames = lua.ScriptArgs["push_plain"][1:]
	pushPlainFrom  = func() []int {
		at := make([]int, len(pushPlainNames))
		for i, name := range pushPlainNames {
			at[i] = lua.OpArgIndex(opPush, name)
		}
		return at
	}()
)

// pushOnly are the places in a batch push's arguments of what only
// batch.lua's general path reads (lua.PushGeneral), in order, and
// pushOnlyUnused the value each holds when a push does not use it. A
// unique key's and a schedule's places are "" here whatever the push:
// plainPush is told of those apart.
var pushOnly, pushOnlyUnused = func() (at []int, unused []string) {
	for name := range lua.PushGeneral {
		at = append(at, lua.OpArgIndex(opPush, name))
	}
	slices.Sort(at)
	for _, i := range at {
		unused = append(unused, lua.PushGeneral[lua.Ops[opPush][i]])
	}
	return at, unused
}()

// plainPush is the plain call for a push to topic whose batch operation
// has args and topics (the topic's fanout children after it), or nil when
// the push uses what only batch.lua does: fanout children (a copy each), a
// unique key, a group, a schedule's fire, an expiry, follow-ups,
// dependencies or a batch, or a topic that is a fanout child. A unique
// key's and a schedule's are given apart: args holds their places in KEYS
// only once the batch is encoded.
func plainPush(topics, args []string, uniqueKey, scheduleKey string) *plainCall {
	if len(topics) != 1 || uniqueKey != "" || scheduleKey != "" || Parent(topics[0]) != topics[0] {
		return nil
	}
	for i, at := range pushOnly {
		if args[at] != pushOnlyUnused[i] {
			return nil
		}
	}
	return &plainCall{script: pushPlainScript, topics: topics, push: args}
}

// plainPop is the plain call for a reserving pop (mode popFirst or popBest)
// of topics, or nil: a pop of several topics, a take or a peek goes
// through batch.lua.
func plainPop(mode string, topics []string, more string) *plainCall {
	if len(topics) != 1 || (mode != popFirst && mode != popBest) || Parent(topics[0]) != topics[0] {
		return nil
	}
	return &plainCall{script: popPlainScript, args: []string{"topic", topics[0], "more", more}, topics: topics}
}

// plainAck is the plain call for an ack or a delete (mode deleteAck or
// deleteAny) of member, or nil: one with a result, or beanstalkd's delete
// of a job not reserved (deleteUnreserved), goes through batch.lua.
func plainAck(topic, m string, attempt int, mode, result string) *plainCall {
	if result != "" || (mode != deleteAck && mode != deleteAny) || topic == "" || Parent(topic) != topic {
		return nil
	}
	return &plainCall{script: ackPlainScript, args: []string{"topic", topic, "member", m, "attempt", strconv.Itoa(attempt)}, topics: []string{topic}}
}

// plainAckPop is the plain call for an ack without a result of member (of
// topic), then a reserve of popped's next job, or nil: an ack with a
// result, or a pop of several topics, goes through batch.lua.
func plainAckPop(topic, m string, attempt int, result string, popped []string, more string) *plainCall {
	if result != "" || len(popped) != 1 || topic == "" || Parent(topic) != topic || Parent(popped[0]) != popped[0] {
		return nil
	}
	topics := []string{topic}
	if popped[0] != topic {
		topics = append(topics, popped[0])
	}
	return &plainCall{script: ackPopPlainScript, args: []string{"topic", topic, "member", m, "attempt", strconv.Itoa(attempt),
		"pop_topic", popped[0], "more", more}, topics: topics}
}

// plainGate says, per bucket, until when its calls go through batch.lua
// (unix nanoseconds; 0: they try the plain path).
type plainGate struct{ until atomic.Int64 }

func (g *plainGate) open(now time.Time) bool { return now.UnixNano() >= g.until.Load() }
func (g *plainGate) shut(now time.Time)      { g.until.Store(now.Add(plainRetry).UnixNano()) }

// plainTopics are the topics whose pops go through batch.lua for now
// (GENERAL topic), and until when.
type plainTopics struct {
	mu    sync.Mutex
	until map[string]time.Time
}

func (p *plainTopics) open(topic string, now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	until, ok := p.until[topic]
	if ok && !now.Before(until) {
		delete(p.until, topic)
	}
	return !ok || !now.Before(until)
}

func (p *plainTopics) shut(topic string, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.until == nil || len(p.until) >= plainTopicsMost {
		p.until = map[string]time.Time{}
	}
	p.until[topic] = now.Add(plainRetry)
}

// tryPlain runs o, a batch's only operation, on the plain path when it has
// a plain call and neither its bucket nor its topic is off it. done false:
// it did not, or the script answered GENERAL, having changed nothing: run
// the batch.
func (bt *batcher) tryPlain(run func(script *function, keys, args []string) ([][]rueidis.RedisMessage, error), o *op) (replies [][]rueidis.RedisMessage, err error, done bool) {
	now := time.Now()
	if o.plain == nil || !bt.plain.open(now) {
		return nil, nil, false
	}
	for _, topic := range o.plain.topics {
		if !bt.pool.plainTopics.open(topic, now) {
			return nil, nil, false
		}
	}
	replies, err = run(o.plain.script, bt.pool.keys.withTopics(bt.bucket, o.plain.topics...), o.plain.script.args(bt.pool.caller(), "", o.plain.named()...))
	if err != nil || len(replies) != 1 {
		return replies, err, true
	}
	refusal := decodePlainRefusalReply(replies[0])
	if refusal.Status != replyGeneral {
		return replies, nil, true
	}
	bt.pool.shutPlainGate(refusal, bt.bucket, now)
	return nil, nil, false
}

// shutPlainGate takes a plain script's GENERAL refusal: 'settings' sends
// bucket's calls through batch.lua for plainRetry, 'topic' the pops of the
// topic named next (paused, may hold expired jobs, a fanout child); any
// other reason ('job', 'late') is about that call alone.
func (p *Pool) shutPlainGate(refusal plainRefusalReply, bucket int, now time.Time) {
	switch refusal.Why {
	case "settings":
		p.batchers[bucket].plain.shut(now)
	case "topic":
		p.plainTopics.shut(refusal.Topic, now)
	}
}
