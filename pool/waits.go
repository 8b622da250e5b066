package pool

import (
	"context"
	"math"
	"strconv"
	"time"

	"github.com/redis/rueidis"
)

// What a pop that found no job tells its waiting consumer (when a topic
// opens: a pause's end, a rate's next token; which topic's limits held it
// back), and the wake-ups and stats of consumers that wait.

// opening is when the first of a pop's topics that held ready jobs back
// opens (its pause ends, its rate gives a token): after wait (< 0: none),
// topic.
type opening struct {
	wait   time.Duration
	topic  string
	heldBy string // the first topic a limit held back (Popped.HeldBy)
}

var noOpening = opening{wait: -1}

// sooner is o or the opening an EMPTY (or PEEK-less) reply names, whichever
// comes first.
func (o opening) sooner(r popReply) opening {
	if o.heldBy == "" {
		o.heldBy = r.HeldBy
	}
	if x := time.Duration(r.WaitMs) * time.Millisecond; x >= 0 && (o.wait < 0 || x < o.wait) {
		o.wait, o.topic = x, r.Topic
	}
	return o
}

// popped is a pop that found no job, with o's opening.
func (o opening) popped() Popped {
	if o.wait < 0 {
		return Popped{HeldBy: o.heldBy}
	}
	return Popped{PauseWait: o.wait, WaitTopic: o.topic, HeldBy: o.heldBy}
}

// WakeEveryone asks every broker's consumers waiting on topic to look
// again (a wake-up from origin '*', which the sender acts on too: lua/lib.lua
// EVERYONE), when some broker has consumers waiting there.
func (p *Pool) WakeEveryone(ctx context.Context, topic string) error {
	channel, err := p.client.Do(ctx, p.client.B().Get().Key(p.keys.waiting(topic)).Build()).ToString()
	if rueidis.IsRedisNil(err) {
		return nil
	}
	if err != nil {
		return wrapRedis("wake", err)
	}
	msg := Wake{Origin: everyone, N: math.MaxInt32, Topic: topic}.String()
	return wrapRedis("wake", p.client.Do(ctx, p.client.B().Publish().Channel(channel).Message(msg).Build()).Error())
}

// NoteHeld adds d to the time consumers' pops were held back by topic's
// limits (its stats' LimitedTime), unless the topic was forgotten meanwhile.
func (p *Pool) NoteHeld(ctx context.Context, topic string, d time.Duration) error {
	b := p.keys.bucketOf(topic)
	err := noteHeldScript.Exec(ctx, p.client, p.keys.withTopics(b, topic),
		noteHeldScript.args(p.caller(), "", "topic", topic, "ms", strconv.FormatInt(d.Milliseconds(), 10))).Error()
	return wrapRedis("note held", err)
}

// SetWaiting tells the pool how to learn whether consumers of this broker
// wait in a long poll: a pop then asks its script whether its topic has
// more ready jobs, to hand the news on to one of them (Popped.More). With
// none waiting the question is not asked (a command less a pop), and a
// consumer that starts to wait looks for itself first. Unset, every pop asks.
func (p *Pool) SetWaiting(waiting func() bool) { p.waiting.Store(&waiting) }

// askMore is a pop's "more" argument: "1" to be told, "" not to.
func (p *Pool) askMore() string {
	if w := p.waiting.Load(); w != nil && !(*w)() {
		return ""
	}
	return "1"
}
