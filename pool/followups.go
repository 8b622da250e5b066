package pool

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/gmq/gmq/job"
)

// An ack may carry follow-ups: jobs pushed once the ack succeeds
// (lua/followups.lua), and a job its own (then, on_dead). The ack keeps
// them in its job's bucket in the same script call, each under the number
// it will have, so the ack answers their ids at once; the broker that
// acked then pushes them (pushFollowUps), and a bucket's timer pushes
// those a dead broker or a refusal left, after followUpGrace
// (moveFollowUps). Each push carries a marker, a unique key in its topic
// held for followUpMarkerFor, so a push made again after a crash (between
// the push and its removal from the bucket) is refused, and the follow-up
// is made once. Only a store at format 4 holds them.

// FollowUpFormat is the store format from which an ack may carry
// follow-ups: an older broker's timer would not push them.
const FollowUpFormat = 4

// followupsDue is the bucket's follow-ups in its due zset
// (lua/followups.lua FOLLOWUPS_DUE).
const followupsDue = "@followups"

// followUpMarkerFor is how long a follow-up's marker holds after its push:
// far longer than a push and its removal may be apart (a round of the
// bucket's timer; a Redis down between the two holds both).
const followUpMarkerFor = 24 * time.Hour

// followUpGrace is how long the follow-ups an ack kept wait for the broker
// that acked to push them before the bucket's timers do: one round of
// pushes, with room for a slow Redis (a crash of that broker delays them
// this long).
const followUpGrace = 5 * time.Second

// followUpLease is how long follow-ups a timer took wait before another
// takes them: its round pushes them and removes them well before, and
// one whose broker died meanwhile is taken again then.
const followUpLease = followUpGrace

// followUpLaterMost is the longest a follow-up its topic keeps refusing
// waits between tries (followUpLater, doubled at each refusal).
const followUpLaterMost = time.Hour

// followUpLater is how long a follow-up its topic refused for now (full,
// Redis at maxmemory, a group backlog) waits before it is pushed again.
const followUpLater = time.Second

// followUp is a follow-up as it waits in its bucket: what the script keeps
// of it, opaque to the script, read back by moveFollowUps.
type followUp struct {
	Seq  uint64   `json:"seq"` // its number, with its topic's bucket: the job's id
	Spec job.Spec `json:"spec"`
	// Result is the finished job's result, which the script adds
	// (lib_outcomes.lua follow_up) for a spec WithResult to take.
	Result json.RawMessage `json:"result,omitempty"`
}

// body is the follow-up's body as pushed: its own, or with WithResult
// its own and the finished job's result (job.WithResultBody).
func (f followUp) body() (string, bool, error) {
	if !f.Spec.WithResult {
		return f.Spec.Body, f.Spec.BodyJSON, nil
	}
	body, err := job.WithResultBody(f.Spec.Body, f.Spec.BodyJSON, string(f.Result))
	return body, true, err
}

// ErrFollowUpsNeedFormat is an ack with follow-ups on a store below
// FollowUpFormat: a broker that cannot push them is still recorded.
var ErrFollowUpsNeedFormat = fmt.Errorf("%w: an ack's follow-ups need the store at format %d, and a broker that reads only an older one is still recorded (docs/operations.md, Upgrades)",
	job.ErrBusy, FollowUpFormat)

// AckedPushing is what AckPushing did: the follow-ups' ids, in their
// order, and the bucket that kept them; or, Again, nothing, as the job was
// completed by an earlier ack, which kept its own follow-ups.
type AckedPushing struct {
	IDs    []uint64
	Bucket int
	Again  bool
	// Ready is how many follow-ups became ready in which topics, pushed by
	// this call; PushErr why some were not (the bucket's timer pushes them
	// after followUpGrace: the ack stands).
	Ready   map[string]int
	PushErr error
	// Kept is how long the job is kept completed (0: deleted; none told
	// when Again).
	Kept time.Duration
}

// AckPushing acks job id as Ack does and, in the same script call, keeps
// specs (validated by the caller, none unique) to be pushed once it is
// done, with the job's own follow-ups (its Then).
func (p *Pool) AckPushing(ctx context.Context, id string, attempt int, result string, specs []job.Spec) (AckedPushing, error) {
	if p.Format() < FollowUpFormat {
		return AckedPushing{}, ErrFollowUpsNeedFormat
	}
	n, err := p.Resolve(ctx, id)
	if err != nil {
		return AckedPushing{}, err
	}
	return p.ackNumberPushing(ctx, n, attempt, result, specs)
}

// ackNumberPushing is AckPushing of job n: followups.lua's ack, which
// keeps the ack's follow-ups (specs) and the job's own.
func (p *Pool) ackNumberPushing(ctx context.Context, n uint64, attempt int, result string, specs []job.Spec) (AckedPushing, error) {
	entries, ids, err := p.followUpEntries(ctx, specs)
	if err != nil {
		return AckedPushing{}, fmt.Errorf("ack: %w", err)
	}
	var unconfirmed error // with wait_replicas: the ack and its follow-ups not yet on enough replicas
	reply, err := p.onNumber(ctx, "ack", n, attempt, func(ctx context.Context, b int, m, topic string) ([]rueidis.RedisMessage, error) {
		keys := p.keys.withTopics(b, topic)
		args := followupsScript.args(p.caller(), "ack", "member", m, "topic", topic, "attempt", strconv.Itoa(attempt),
			"result", result, "entries", entries, "grace", strconv.FormatInt(millis(followUpGrace), 10))
		var client rueidis.Client = p.client
		var wait *waitClient
		if p.opts.WaitReplicas > 0 { // the follow-ups are pushes: the ack that keeps them waits as a push does
			wait = p.newWaitClient()
			client = wait
		}
		reply, err := followupsScript.Exec(ctx, client, keys, args).ToArray()
		if wait != nil && err == nil {
			unconfirmed = wait.shortfall()
		}
		return reply, err
	})
	if err != nil {
		return AckedPushing{}, err
	}
	acked := decodeFollowupsAckReply(reply)
	if unconfirmed != nil && acked.Status == replyOK {
		// Not pushed from here: a failover could take the ack back, and
		// the job, delivered again, would be acked with them again. Its
		// bucket's timer pushes them after the grace, if the ack stands.
		return AckedPushing{}, fmt.Errorf("ack with follow-ups: %w", unconfirmed)
	}
	if acked.Kept == "again" {
		return AckedPushing{Again: true}, nil
	}
	p.dropAck(ctx, acked.CID, n, acked.Dropped)
	b := int(n % uint64(p.opts.Buckets))
	// Pushed at once, by this broker: the bucket's timer only finds those
	// a crash (or a refusal) left, after followUpGrace.
	pairs := acked.KeptFollowups // each follow-up the script kept, as kept: the ack's and the job's own
	keptMs, _ := strconv.ParseInt(acked.Kept, 10, 64)
	out := AckedPushing{IDs: ids, Bucket: b, Kept: time.Duration(keptMs) * time.Millisecond}
	if len(pairs) > 0 {
		out.Ready, _, out.PushErr = p.pushFollowUps(ctx, b, pairs)
	}
	if ready := p.followUpReady.Load(); ready != nil {
		for topic, n := range out.Ready {
			(*ready)(topic, n)
		}
	}
	return out, nil
}

// followUpEntries numbers follow-ups (each in its topic's bucket) and
// encodes them as the scripts keep them: JSON [[id, spec], ...] ("" for
// none).
func (p *Pool) followUpEntries(ctx context.Context, specs []job.Spec) (string, []uint64, error) {
	if len(specs) == 0 {
		return "", nil, nil
	}
	seqs, err := p.ids.next(ctx, p.client, len(specs))
	if err != nil {
		return "", nil, wrapRedis("allocate the follow-ups' ids", err)
	}
	entries := make([][2]string, len(specs))
	ids := make([]uint64, len(specs))
	for i, s := range specs {
		ids[i] = seqs[i]*uint64(p.opts.Buckets) + uint64(p.keys.bucketOf(s.Topic))
		data, err := json.Marshal(followUp{Seq: seqs[i], Spec: s})
		if err != nil {
			return "", nil, fmt.Errorf("follow-up %d: %w", i, err)
		}
		entries[i] = [2]string{member(ids[i]), string(data)}
	}
	data, err := json.Marshal(entries)
	return string(data), ids, err
}

// followUpMarker is a follow-up's unique key in its topic: its id.
func followUpMarker(id uint64) *job.Unique {
	return &job.Unique{Key: job.FollowUpKeyPrefix + strconv.FormatUint(id, 10), For: followUpMarkerFor, Mode: job.UniqueReject}
}

// moveFollowUps pushes one batch of bucket b's follow-ups due now (those
// whose acking broker did not push them within followUpGrace, and those
// put off): pushFollowUps.
func (p *Pool) moveFollowUps(ctx context.Context, b int) (map[string]int, bool, error) {
	keys := p.keys.withTopics(b)
	r, err := followupsScript.Exec(ctx, p.client, keys, followupsScript.args(p.caller(), "take", "n", strconv.Itoa(p.opts.TickBatch),
		"lease", strconv.FormatInt(millis(followUpLease), 10))).ToArray()
	if err != nil {
		return nil, false, wrapRedis("push follow-ups", err)
	}
	pairs := decodeFollowupsTakeReply(r).Followups
	if len(pairs) == 0 {
		return nil, false, nil
	}
	ready, left, err := p.pushFollowUps(ctx, b, pairs)
	if errors.As(err, new(errFollowUpsPutOff)) {
		// Refused by their topics and put off (their tries back off), not
		// the timer's failure: its round goes on to the bucket's other
		// work. current_followups counts them.
		err = nil
	}
	return ready, err == nil && left > 0 && len(pairs) == p.opts.TickBatch, err
}

// pushFollowUps pushes follow-ups of bucket b (id, spec pairs as kept),
// each under its own number and marker, then removes those pushed (or
// found pushed before: their marker held, or their number taken) and puts
// off the others: a refusal for now (full, too big, Redis at maxmemory, a
// conflict of the topic's state) waits followUpLater, doubled at each next
// refusal up to followUpLaterMost; a failure to reach
// Redis leaves them for the timer's next round. None is dropped. It
// returns how many became ready in which topics, and how many follow-ups
// the bucket has left.
func (p *Pool) pushFollowUps(ctx context.Context, b int, pairs [][2]string) (map[string]int, int64, error) {
	type entry struct {
		id     string
		f      followUp
		notice string // a notice to a waiting job (deps.go): its spec
		got    Pushed
		err    error
		made   bool
	}
	list := make([]*entry, len(pairs))
	for i, pair := range pairs {
		list[i] = &entry{id: pair[0]}
		if strings.HasPrefix(pair[0], depNoticePrefix) || strings.HasPrefix(pair[0], batchNoticePrefix) {
			list[i].notice = pair[1]
			continue
		}
		if err := json.Unmarshal([]byte(pair[1]), &list[i].f); err != nil {
			list[i].err = fmt.Errorf("follow-up %s: unreadable: %w", pair[0], err)
		}
	}
	var wg sync.WaitGroup
	// A batch's notices go to it together, one call a batch (counted
	// below as ones pushed before).
	byBatch := map[uint64][]*entry{}
	for _, e := range list {
		if e.err != nil || !strings.HasPrefix(e.id, batchNoticePrefix) {
			continue
		}
		if batch, _, err := noticeBatch(e.id); err != nil {
			e.err = err
		} else {
			byBatch[batch] = append(byBatch[batch], e)
		}
	}
	for batch, told := range byBatch {
		wg.Go(func() {
			notices := make([][2]string, len(told))
			for i, e := range told {
				notices[i] = [2]string{e.id, e.notice}
			}
			bad, err := p.tellBatch(ctx, batch, notices)
			for _, e := range told {
				e.err = cmp.Or(bad[e.id], err)
				e.made = e.err == nil
			}
		})
	}
	for _, e := range list {
		if strings.HasPrefix(e.id, batchNoticePrefix) || e.err != nil { // a batch notice first: told above, by goroutines that may still write its err
			continue
		}
		wg.Go(func() {
			if e.notice != "" {
				// Counted below as a push that made its job ready or
				// delayed; one that changed nothing as one pushed before.
				e.f.Spec.Topic, e.got, e.made, e.err = p.tellDependent(ctx, e.id, e.notice)
				return
			}
			spec := e.f.Spec
			n := e.f.Seq*uint64(p.opts.Buckets) + uint64(p.keys.bucketOf(spec.Topic))
			spec.Unique, spec.WithResult = followUpMarker(n), false
			if spec.Body, spec.BodyJSON, e.err = e.f.body(); e.err != nil {
				return
			}
			// A topic with fanout children takes no unique key: pushed
			// without its marker, so a crash between this push and its
			// removal makes it again if it was already done with (its
			// number still refuses it while it waits). The pool's list of
			// children says so first; a stale one costs a second push.
			if len(p.fanout.get(spec.Topic)) > 0 {
				spec.Unique = nil
			}
			e.got, e.err = p.push(ctx, spec, e.f.Seq, scheduleFire{})
			if spec.Unique != nil && errors.As(e.err, new(uniqueFanoutError)) {
				spec.Unique = nil
				e.got, e.err = p.push(ctx, spec, e.f.Seq, scheduleFire{})
			}
			var held *job.UniqueError
			switch {
			case e.err == nil:
				e.made = true
			case errors.As(e.err, &held) && spec.Unique != nil && held.Key == spec.Unique.Key && held.ID == n, errors.Is(e.err, errTaken):
				e.made, e.err = true, nil // pushed before: a crash came between its push and its removal
			}
		})
	}
	wg.Wait()
	keys := p.keys.withTopics(b)
	ready := map[string]int{}
	done := followupsScript.args(p.caller(), "done")
	var refused []string // put off: their topics refused them
	var failed error
	unreached := false // a failure to reach Redis, not only refusals
	for _, e := range list {
		switch {
		case e.made:
			switch {
			case e.got.ID == 0: // pushed before
			case !e.got.Due.IsZero():
				if due := p.followUpDue.Load(); due != nil {
					(*due)(e.f.Spec.Topic, e.got.Due, e.got.Now)
				}
			case e.got.Kept:
				ready[e.f.Spec.Topic]++
			}
			for _, child := range e.got.Children {
				ready[child]++
			}
			done = append(done, e.id)
		case isRedisFailure(e.err):
			failed = errors.Join(failed, e.err) // left for the next round
			unreached = true
		default:
			failed = errors.Join(failed, e.err)
			refused = append(refused, e.id)
		}
	}
	calls := [][]string{done}
	if len(refused) > 0 {
		calls = append(calls, append(followupsScript.args(p.caller(), "later", "ms", strconv.FormatInt(millis(followUpLater), 10),
			"max", strconv.FormatInt(millis(followUpLaterMost), 10)), refused...))
	}
	var left int64
	for _, args := range calls {
		var err error
		if left, err = followupsScript.Exec(ctx, p.client, keys, args).AsInt64(); err != nil {
			return ready, 0, errors.Join(failed, wrapRedis("push follow-ups", err))
		}
	}
	if failed != nil && !unreached {
		return ready, left, errFollowUpsPutOff{fmt.Errorf("push follow-ups: their topics refused some, put off: %w", failed)}
	}
	if failed != nil {
		return ready, left, fmt.Errorf("push follow-ups: %w", failed)
	}
	return ready, left, nil
}

// errFollowUpsPutOff is pushFollowUps's error when every failure was a
// topic's refusal, each put off (later): done with for this round.
type errFollowUpsPutOff struct{ error }

func (e errFollowUpsPutOff) Unwrap() error { return e.error }

// OnFollowUpsReady has fn told of the follow-ups an ack through this pool
// pushed at once and made ready (their topic, how many), so that the
// broker's consumers waiting on it look (a timer's are told as its ticks'
// are).
func (p *Pool) OnFollowUpsReady(fn func(topic string, n int)) { p.followUpReady.Store(&fn) }

// OnFollowUpDue has fn told of each delayed follow-up this pool's timers
// push (its topic, when it is due, and the push's instant, on Redis's
// clock), so that the broker's timer of its bucket wakes then.
func (p *Pool) OnFollowUpDue(fn func(topic string, due, now time.Time)) { p.followUpDue.Store(&fn) }

// isRedisFailure says err is Redis out of reach or slow rather than a
// topic's refusal.
func isRedisFailure(err error) bool {
	return errors.Is(err, job.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}
