package pool

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/gmq/gmq/job"
	"github.com/gmq/gmq/lua"
)

// DueTopics returns up to limit topics of bucket b that have due work
// (delayed jobs whose time came, reservations whose TTR ran out) and, when
// there are none, how long until the earliest is due (-1: nothing scheduled).
func (p *Pool) DueTopics(ctx context.Context, b, limit int) (topics []string, wait time.Duration, err error) {
	reply, err := dueTopicsScript.Exec(ctx, p.client, []string{p.keys.due(b)}, lua.Args("due_topics", "n", strconv.Itoa(limit))).ToArray()
	if err != nil {
		return nil, 0, wrapRedis("due topics", err)
	}
	due := decodeDueTopicsReply(reply)
	if due.WaitMs < 0 {
		return nil, -1, nil
	}
	return due.Topics, time.Duration(due.WaitMs) * time.Millisecond, nil
}

// outboxDue is the bucket's outbox in its due zset (lua/lib.lua OUTBOX_DUE):
// expired jobs to push to their topics' expire_to.
const outboxDue = "@outbox"

// Tick does one batch of a due entry of bucket b: for a topic, it expires
// jobs whose time ran out and moves due jobs to ready (delayed jobs whose
// time came, reservations whose TTR ran out, counting a timeout); for the
// outbox, it pushes expired jobs to their expire_to topics; for the
// follow-ups, it pushes the acks' follow-ups (followups.go). It returns how
// many jobs became ready in which topics, and whether more is due.
func (p *Pool) Tick(ctx context.Context, b int, topic string) (ready map[string]int, more bool, err error) {
	if topic == outboxDue {
		return p.moveExpired(ctx, b)
	}
	if topic == followupsDue {
		return p.moveFollowUps(ctx, b)
	}
	if topic == batchesDue {
		return p.sweepBatches(ctx, b)
	}
	if name, ok := strings.CutPrefix(topic, scheduleDue); ok {
		return p.fireSchedule(ctx, b, name)
	}
	reply, err := tickScript.Exec(ctx, p.client, p.keys.withTopics(b, topic),
		tickScript.args(p.caller(), "", "topic", topic, "n", strconv.Itoa(p.opts.TickBatch))).ToArray()
	if err != nil {
		return nil, false, wrapRedis("tick "+topic, err)
	}
	ticked := decodeTickReply(reply)
	p.dropAliases(ctx, ticked.Dropped)
	if n := int(ticked.Ready); n > 0 {
		ready = map[string]int{topic: n}
	}
	return ready, ticked.More, nil
}

// moveExpired pushes one batch of bucket b's expired jobs to their topics
// (expire_to) as fresh jobs, with no expiry but their new topic's max_age,
// all at once (PushBatch: they share id blocks and script calls), then
// removes from the outbox those that were pushed, or that their new topic
// refused (full, too big: dropped, they had expired, and counted in
// RefusedExpired). A job whose push failed otherwise (Redis gone) stays for
// the next round; a crash between the pushes and their removal pushes them
// again (at least once, never lost).
func (p *Pool) moveExpired(ctx context.Context, b int) (map[string]int, bool, error) {
	keys := p.keys.withTopics(b)
	r, err := outboxScript.Exec(ctx, p.client, keys, outboxScript.args(p.caller(), "take", "n", strconv.Itoa(p.opts.TickBatch))).ToArray()
	if err != nil {
		return nil, false, wrapRedis("move expired jobs", err)
	}
	var members []string
	var specs []job.Spec
	for _, e := range decodeOutboxTakeReply(r).Jobs {
		members = append(members, e.Member)
		specs = append(specs, job.Spec{Topic: e.Topic, Priority: uint32(e.Priority),
			TTR: time.Duration(e.TTRMs) * time.Millisecond, Body: e.Body, TraceParent: e.Trace,
			Group: e.Group, BodyJSON: e.JSON})
	}
	if len(specs) == 0 {
		return nil, false, nil
	}
	pushed, errs := p.PushBatch(ctx, specs)
	ready := map[string]int{}
	done := outboxScript.args(p.caller(), "done")
	var failed error
	for i, err := range errs {
		switch {
		case err == nil:
			if pushed[i].Due.IsZero() {
				ready[specs[i].Topic]++
			}
		case errors.Is(err, job.ErrFull), errors.Is(err, job.ErrTooBig), errors.Is(err, job.ErrDuplicate),
			errors.Is(err, job.ErrInvalid), errors.Is(err, job.ErrConflict):
			// Refused for good (full, too big, its unique key held by a job
			// that stands for it, or its topic's state): retrying would
			// stall the bucket's timer behind it. Dropped, as expired.
			p.refusedExpired.Add(1)
		default:
			failed = errors.Join(failed, err)
			continue // left in the outbox for the next round
		}
		done = append(done, members[i])
	}
	left, err := outboxScript.Exec(ctx, p.client, keys, done).AsInt64()
	if err != nil {
		return ready, false, errors.Join(failed, wrapRedis("move expired jobs", err))
	}
	if failed != nil {
		return ready, false, fmt.Errorf("move expired jobs: %w", failed)
	}
	return ready, left > 0, nil
}

// MarkWaiting tells every broker, for ttl, that this one has consumers
// waiting on topic: scripts that make jobs ready there then announce them on
// the wake channel.
func (p *Pool) MarkWaiting(ctx context.Context, topic string, ttl time.Duration) error {
	cmd := p.client.B().Set().Key(p.keys.waiting(topic)).Value(p.keys.channel()).Px(ttl).Build()
	return wrapRedis("mark waiting", p.client.Do(ctx, cmd).Error())
}

// Wake is an announcement that n jobs became ready in a topic, or, with
// Ended set, that job Ended ended (How: "completed", "dead", "acked",
// "deleted", "expired", "taken" or "discarded"; lib.lua announce_end) and
// a broker waits for it (MarkEndWait).
//
// With FollowUpsDue set, it says that bucket Bucket has follow-ups due now
// (notices an end left: lib.lua flush), which its timer should hand over
// at once rather than at its next round.
type Wake struct {
	Origin       string
	N            int
	Topic        string
	Ended        uint64
	How          string
	FollowUpsDue bool
	Bucket       int
}

// Subscribe calls fn for each wake-up announced by other brokers, and those
// a script sent to every broker (origin '*', as a freed max_reserved slot:
// lua/lib.lua EVERYONE), until ctx
// ends (it returns nil) or the subscription breaks (it returns the error; the
// caller subscribes again). onSubscribed runs each time the subscription is
// in place, so the caller can recheck what it may have missed meanwhile.
func (p *Pool) Subscribe(ctx context.Context, onSubscribed func(), fn func(Wake)) error {
	conn, release := p.client.Dedicate()
	defer release()
	broken := conn.SetPubSubHooks(rueidis.PubSubHooks{
		OnMessage: func(msg rueidis.PubSubMessage) {
			w, err := parseWake(msg.Message)
			if err == nil && w.Origin != p.opts.Origin {
				fn(w)
			}
		},
		OnSubscription: func(s rueidis.PubSubSubscription) {
			if s.Kind == "subscribe" {
				onSubscribed()
			}
		},
	})
	if err := conn.Do(ctx, p.client.B().Subscribe().Channel(p.keys.channel()).Build()).Error(); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return wrapRedis("subscribe", err)
	}
	select {
	case err := <-broken:
		return wrapRedis("subscribe", err)
	case <-ctx.Done():
		return nil
	}
}

// everyone is the origin of a wake-up every broker acts on, the sender too
// (lua/lib.lua EVERYONE): no broker's origin is '*'.
const everyone = "*"

// String is w as a wake-up message, as the scripts publish them (lib.lua
// flush) and parseWake reads them: "origin n topic".
func (w Wake) String() string { return w.Origin + " " + strconv.Itoa(w.N) + " " + w.Topic }

func parseWake(s string) (Wake, error) {
	parts := strings.SplitN(s, " ", 3)
	if len(parts) != 3 {
		return Wake{}, fmt.Errorf("bad wake message %q", s)
	}
	if parts[1] == "end" { // "origin end member how": a broker before these reads no number and skips it
		m, how, ok := strings.Cut(parts[2], " ")
		n, err := parseMember(m)
		if !ok || err != nil || how == "" {
			return Wake{}, fmt.Errorf("bad end message %q", s)
		}
		return Wake{Origin: parts[0], Ended: n, How: how}, nil
	}
	n, err := strconv.Atoi(parts[1])
	if err != nil {
		return Wake{}, fmt.Errorf("bad wake message %q: %w", s, err)
	}
	if bucket, ok := strings.CutPrefix(parts[2], followupsDue+" "); ok && n == 0 { // "* 0 @followups N"
		b, err := strconv.Atoi(bucket)
		if err != nil || b < 0 {
			return Wake{}, fmt.Errorf("bad follow-ups message %q", s)
		}
		return Wake{Origin: parts[0], FollowUpsDue: true, Bucket: b}, nil
	}
	return Wake{Origin: parts[0], N: n, Topic: parts[2]}, nil
}

// BucketInfo describes one bucket's timer work.
type BucketInfo struct {
	Bucket  int
	Topics  int       // topics with delayed jobs or reservations
	NextDue time.Time // zero when nothing is scheduled
}

// Bucket reads one bucket's schedule.
func (p *Pool) Bucket(ctx context.Context, b int) (BucketInfo, error) {
	due := p.keys.due(b)
	res := p.client.DoMulti(ctx,
		p.client.B().Zcard().Key(due).Build(),
		p.client.B().Zrange().Key(due).Min("0").Max("0").Withscores().Build())
	n, err := res[0].AsInt64()
	if err != nil {
		return BucketInfo{}, wrapRedis("bucket info", err)
	}
	info := BucketInfo{Bucket: b, Topics: int(n)}
	head, err := res[1].AsZScores()
	if err != nil {
		return BucketInfo{}, wrapRedis("bucket info", err)
	}
	if len(head) > 0 {
		info.NextDue = time.UnixMilli(int64(head[0].Score))
	}
	return info, nil
}
