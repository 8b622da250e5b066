package pool

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/gmq/gmq/job"
	"github.com/gmq/gmq/lua"
)

// ReserveJob reserves one job by id if it is ready, delayed or buried, in
// any topic, paused or not (beanstalkd's reserve-job). A reserved job gives
// ErrNotReserved's StateError.
func (p *Pool) ReserveJob(ctx context.Context, id string) (*job.Job, error) {
	reply, err := p.onJob(ctx, "reserve", id, 0, p.scripted(reserveJobScript))
	if err != nil {
		return nil, err
	}
	return p.reserved(ctx, decodeJobReply(reply).Job)
}

// DeleteUnreserved removes a job unless it is reserved (a StateError then),
// as beanstalkd's delete does for a job another connection holds.
func (p *Pool) DeleteUnreserved(ctx context.Context, id string) error {
	n, err := p.Resolve(ctx, id)
	if err != nil {
		return err
	}
	_, err = p.deleteNumber(ctx, n, 0, deleteUnreserved, "")
	return err
}

// Delete removes a job in any state (a completed one too). With attempt > 0
// it is fenced to that delivery: ErrStale if the job was delivered again
// since.
func (p *Pool) Delete(ctx context.Context, id string, attempt int) error {
	n, err := p.Resolve(ctx, id)
	if err != nil {
		return err
	}
	_, err = p.deleteNumber(ctx, n, attempt, deleteAny, "")
	return err
}

// Ack ends a job its consumer finished, fenced to delivery attempt when > 0
// (ErrStale if the job was delivered again since): it is deleted, or, where
// its topic keeps completed jobs (keep_completed, or its own) or the ack
// gives a result (keep_results), completed with result (a JSON value's
// compact text, "" none; over the topic's max_result, ErrTooBig and the job
// stays as it was). An ack of a job completed already, by the same
// delivery, succeeds and changes nothing.
func (p *Pool) Ack(ctx context.Context, id string, attempt int, result string) error {
	_, err := p.AckKept(ctx, id, attempt, result)
	return err
}

// AckKept is Ack, and says how long the job is kept completed from now (0:
// it was deleted), for the ack's answer: an ack that repeats an earlier one
// says how long is left.
func (p *Pool) AckKept(ctx context.Context, id string, attempt int, result string) (time.Duration, error) {
	n, err := p.Resolve(ctx, id)
	if err != nil {
		return 0, err
	}
	return p.deleteNumber(ctx, n, attempt, deleteAck, result)
}

// deleteNumber is Delete of job n in a delete mode; it says how long the
// job is kept completed (an ack's: 0 when deleted).
func (p *Pool) deleteNumber(ctx context.Context, n uint64, attempt int, mode, result string) (time.Duration, error) {
	reply, err := p.onNumber(ctx, "delete", n, attempt, func(ctx context.Context, b int, m, topic string) ([]rueidis.RedisMessage, error) {
		return p.batchOp(ctx, b, &op{kind: opDelete, topics: []string{topic},
			args:  lua.OpArgs(opDelete, "member", m, "attempt", strconv.Itoa(attempt), "mode", mode, "result", result),
			plain: plainAck(topic, m, attempt, mode, result)})
	})
	if err != nil {
		return 0, err
	}
	acked := decodeAckReply(reply)
	if acked.Status == replyThen { // the job has follow-ups of its own: followups.lua acks it
		got, err := p.ackNumberPushing(ctx, n, attempt, result, nil)
		return got.Kept, err
	}
	p.dropAck(ctx, acked.CID, n, acked.Dropped)
	return time.Duration(acked.KeptMs) * time.Millisecond, nil
}

func priorityArg(pri int64) string {
	if pri < 0 {
		return ""
	}
	return strconv.FormatInt(pri, 10)
}

// Release gives a reserved job back with a new priority (or
// job.KeepPriority), ready at once or after delay, and returns the job as it
// now is.
func (p *Pool) Release(ctx context.Context, id string, attempt int, pri int64, delay time.Duration) (*job.Job, error) {
	return p.jobAfter(ctx, "release", id, attempt, p.scripted(releaseScript, "attempt", strconv.Itoa(attempt),
		"priority", priorityArg(pri), "delay", strconv.FormatInt(millis(delay), 10), "mode", ""))
}

// GiveBack makes a reserved job ready again, unchanged and without counting a
// release: the job of a consumer that went away (beanstalkd's closed connection).
func (p *Pool) GiveBack(ctx context.Context, id string, attempt int) (*job.Job, error) {
	return p.jobAfter(ctx, "release", id, attempt, p.scripted(releaseScript, "attempt", strconv.Itoa(attempt),
		"priority", priorityArg(job.KeepPriority), "delay", "0", "mode", "uncounted"))
}

// Bury parks a reserved job, with a new priority (or job.KeepPriority), until
// it is kicked, and returns the job as it now is.
func (p *Pool) Bury(ctx context.Context, id string, attempt int, pri int64) (*job.Job, error) {
	return p.jobAfter(ctx, "bury", id, attempt, p.scripted(buryScript, "attempt", strconv.Itoa(attempt), "priority", priorityArg(pri)))
}

// Touch restarts a reserved job's TTR and returns the job, its new deadline in Due.
func (p *Pool) Touch(ctx context.Context, id string, attempt int) (*job.Job, error) {
	return p.jobAfter(ctx, "touch", id, attempt, p.scripted(touchScript, "attempt", strconv.Itoa(attempt)))
}

// Cancel cancels a job: a delayed, ready or buried one ends cancelled at
// once (kept as a completed job would be, else removed: the job returned
// is then job.Gone); a reserved one is marked (Cancelling), and ends
// cancelled at its consumer's next touch, progress or ack (which answer
// job.ErrCancelled), or when its TTR runs out. An ended job is a
// *job.StateError.
func (p *Pool) Cancel(ctx context.Context, id string) (*job.Job, error) {
	n, err := p.Resolve(ctx, id)
	if err != nil {
		return nil, err
	}
	reply, err := p.onNumber(ctx, "cancel", n, 0, p.scripted(cancelScript))
	if err != nil {
		return nil, err
	}
	cancelled := decodeCancelReply(reply)
	p.dropAck(ctx, cancelled.CID, n, cancelled.Dropped)
	j, err := parseJob(cancelled.Job)
	if err != nil {
		return nil, fmt.Errorf("cancel job %s: %w", id, err)
	}
	return j, nil
}

// Progress records a reserved job's progress (a JSON value's compact text,
// "" none; at most its topic's max_result) and a line of its log ("" none),
// fenced by attempt as a touch is, and gives the job a fresh TTR. A job
// cancelled while held is job.ErrCancelled, and has ended so.
func (p *Pool) Progress(ctx context.Context, id string, attempt int, progress, line string) (*job.Job, error) {
	return p.jobAfter(ctx, "progress", id, attempt, p.scripted(progressScript, "attempt", strconv.Itoa(attempt),
		"progress", progress, "log", line))
}

// KickJob makes a buried or delayed job ready and returns it.
func (p *Pool) KickJob(ctx context.Context, id string) (*job.Job, error) {
	return p.jobAfter(ctx, "kick", id, 0, p.scripted(kickJobScript))
}

// UpdateJob changes a ready or delayed job's delay, priority or body (those
// u sets) in one script and returns the job as it now is: a job in another
// state gives a *job.StateError, a body over the topic's limits ErrTooBig
// or ErrFull.
func (p *Pool) UpdateJob(ctx context.Context, id string, u job.Update) (*job.Job, error) {
	var delay, pri, body, given, asJSON string
	if u.Delay != nil {
		delay = strconv.FormatInt(millis(*u.Delay), 10)
	}
	if u.Priority != nil {
		pri = strconv.FormatUint(uint64(*u.Priority), 10)
	}
	if u.Body != nil {
		body, given, asJSON = *u.Body, "1", flag(u.BodyJSON)
	}
	return p.jobAfter(ctx, "update", id, 0, p.scripted(updateJobScript, "delay", delay, "priority", pri, "body", body,
		"body_given", given, "json", asJSON))
}

// jobAfter runs a transition on one job and reads the job its script returns.
func (p *Pool) jobAfter(ctx context.Context, op string, id string, attempt int, call jobCall) (*job.Job, error) {
	reply, err := p.onJob(ctx, op, id, attempt, call)
	if err != nil {
		return nil, err
	}
	j, err := parseJob(decodeJobReply(reply).Job)
	if err != nil {
		return nil, fmt.Errorf("%s job %s: %w", op, id, err)
	}
	return j, nil
}

// A jobCall runs one operation on job m of bucket b, given the job's topic.
type jobCall func(ctx context.Context, b int, m, topic string) ([]rueidis.RedisMessage, error)

// scripted is a jobCall of its own script, whose arguments are the job's
// member and topic, then named (name, value pairs: lua.Args).
func (p *Pool) scripted(script *function, named ...string) jobCall {
	return func(ctx context.Context, b int, m, topic string) ([]rueidis.RedisMessage, error) {
		args := script.args(p.caller(), "", append([]string{"member", m, "topic", topic}, named...)...)
		return script.Exec(ctx, p.client, p.keys.withTopics(b, topic), args).ToArray()
	}
}

// batched is a jobCall that goes in the bucket's batch (batch.go) as an
// operation of that kind, with the keys of more topics after the job's and
// its arguments after the member as name, value pairs (lua.OpArgs).
func (p *Pool) batched(kind string, more []string, named ...string) jobCall {
	return func(ctx context.Context, b int, m, topic string) ([]rueidis.RedisMessage, error) {
		args := lua.OpArgs(kind, append([]string{"member", m}, named...)...)
		return p.batch(ctx, b, kind, append([]string{topic}, more...), args...)
	}
}

// onJob runs an operation on one job, found by its public id (gmq's number
// or a client id, resolved here, once).
func (p *Pool) onJob(ctx context.Context, op, id string, attempt int, call jobCall) ([]rueidis.RedisMessage, error) {
	n, err := p.Resolve(ctx, id)
	if err != nil {
		return nil, err
	}
	return p.onNumber(ctx, op, n, attempt, call)
}

// onNumber runs an operation on job n. The scripts need the keys of the
// job's topic; the pool remembers the topics of jobs it has seen, and a
// script given the wrong topic changes nothing and names the right one, so an
// unknown job costs one extra round trip, never a wrong change. attempt is
// the delivery the call is fenced to (0: none), for the error that names a
// newer one.
func (p *Pool) onNumber(ctx context.Context, op string, n uint64, attempt int, call jobCall) ([]rueidis.RedisMessage, error) {
	b := int(n % uint64(p.opts.Buckets))
	m := member(n)
	topic, _ := p.topicOf.get(n)
	for range 2 {
		reply, err := call(ctx, b, m, topic)
		if err != nil {
			return nil, wrapRedis(op, err)
		}
		r := decodeJobCallReply(reply)
		switch r.Status {
		case replyOK, replyThen: // THEN: its caller asks followups.lua (followups.go)
			return reply, nil
		case replyTopic:
			topic = r.Topic
			p.topicOf.put(n, topic)
			continue
		case replyNotFound:
			return nil, fmt.Errorf("%s job %d: %w", op, n, job.ErrNotFound)
		case replyCancelled: // it was cancelled while held, and ended so by this call
			p.dropAck(ctx, r.CID, n, r.Dropped)
			return nil, fmt.Errorf("%s job %d: %w", op, n, job.ErrCancelled)
		case replyStale: // a library loaded by an older broker names no state (0)
			return nil, fmt.Errorf("%s job %d: %w", op, n, &job.StaleError{Attempt: attempt, Current: int(r.Current), State: job.State(r.State)})
		case replyState:
			return nil, fmt.Errorf("job %d: %w", n, &job.StateError{Op: op, State: job.State(r.State)})
		case replyFull: // in the job's terms, without its number (job.Outcome)
			return nil, fmt.Errorf("%w: its topic's %s is %d", job.ErrFull, r.Limit, r.Max)
		case replyTooBig:
			if r.Limit == "max_result" { // an ack's result
				return nil, &job.ResultTooBigError{Max: r.Max} // the front end names the job
			}
			return nil, fmt.Errorf("%w: its topic's max_item_size is %d", job.ErrTooBig, r.Max)
		}
		return nil, fmt.Errorf("%s job %d: unexpected reply %v", op, n, reply)
	}
	return nil, fmt.Errorf("%s job %d: its topic changed while asking", op, n)
}

// Kick makes up to n jobs of a topic ready: its buried jobs, oldest first, if
// it has any, else its delayed jobs, soonest first. It works in batches so a
// large n never holds Redis long.
func (p *Pool) Kick(ctx context.Context, topic string, n int) (int, error) {
	b := p.keys.bucketOf(topic)
	keys := p.keys.withTopics(b, topic)
	kicked, kind := 0, ""
	for kicked < n {
		batch := min(n-kicked, p.opts.TickBatch)
		reply, err := kickScript.Exec(ctx, p.client, keys, kickScript.args(p.caller(), "", "topic", topic, "n", strconv.Itoa(batch), "kind", kind)).ToArray()
		if err != nil {
			return kicked, wrapRedis("kick", err)
		}
		r := decodeKickReply(reply)
		got := int(r.Kicked)
		kicked += got
		kind = r.Kind
		if got < batch {
			break
		}
	}
	return kicked, nil
}

// PauseParams say how a topic is paused.
type PauseParams struct {
	For time.Duration // how long pops stop (0 resumes the topic)
	// EvenIfUnknown pauses a topic that holds no job and was never known
	// (a beanstalkd tube that exists because a connection uses it); without
	// it such a topic is ErrNotFound.
	EvenIfUnknown bool
}

// Pause stops pops from a topic for a while, as pp says, and says until when.
func (p *Pool) Pause(ctx context.Context, topic string, pp PauseParams) (until time.Time, err error) {
	b := p.keys.bucketOf(topic)
	reply, err := pauseScript.Exec(ctx, p.client, p.keys.withTopics(b, topic),
		pauseScript.args(p.caller(), "", "topic", topic, "ms", strconv.FormatInt(millis(pp.For), 10), "create", flag(pp.EvenIfUnknown))).ToArray()
	if err != nil {
		return time.Time{}, wrapRedis("pause", err)
	}
	paused := decodePauseReply(reply)
	if paused.Status != replyOK {
		return time.Time{}, fmt.Errorf("pause topic %q: %w", topic, job.ErrNotFound)
	}
	if ms := paused.UntilMs; ms > 0 {
		until = time.UnixMilli(ms)
	}
	return until, nil
}

// Peek reads a job by its public id, with its body.
func (p *Pool) Peek(ctx context.Context, id string) (*job.Job, error) {
	n, err := p.Resolve(ctx, id)
	if err != nil {
		return nil, err
	}
	return p.peekNumber(ctx, n)
}

// peekNumber reads job n, with its body.
func (p *Pool) peekNumber(ctx context.Context, n uint64) (*job.Job, error) {
	b := int(n % uint64(p.opts.Buckets))
	reply, err := peekScript.Exec(ctx, p.client, p.keys.bucket(b), peekScript.args(p.caller(), "", "member", member(n))).ToArray()
	if err != nil {
		return nil, wrapRedis("peek", err)
	}
	peeked := decodeJobReply(reply)
	if peeked.Status != replyOK {
		return nil, fmt.Errorf("peek job %d: %w", n, job.ErrNotFound)
	}
	return parseJob(peeked.Job)
}

// MarkEndWait begins a wait for job n's end (its number: the caller
// resolved its id once): unless it has ended
// (Completed or Dead: the job returned says so), its end is announced from
// then on to every broker's Subscribe (Wake.Ended). ErrNotFound: no such
// job, or it ended and was not kept.
func (p *Pool) MarkEndWait(ctx context.Context, n uint64) (*job.Job, error) {
	b := int(n % uint64(p.opts.Buckets))
	reply, err := endWaitScript.Exec(ctx, p.client, p.keys.bucket(b),
		endWaitScript.args(p.caller(), "", "member", member(n), "channel", p.keys.channel())).ToArray()
	if err != nil {
		return nil, wrapRedis("wait for a job's end", err)
	}
	marked := decodeJobReply(reply)
	if marked.Status != replyOK {
		return nil, fmt.Errorf("wait for job %d: %w", n, job.ErrNotFound)
	}
	return parseJob(marked.Job)
}

// PeekTopic reads the next job of a topic in state s (Ready, Delayed or Buried).
func (p *Pool) PeekTopic(ctx context.Context, topic string, s job.State) (*job.Job, error) {
	if s != job.Ready && s != job.Delayed && s != job.Buried {
		return nil, fmt.Errorf("peek %s: %w: only ready, delayed and buried jobs can be peeked by topic", s, job.ErrInvalid)
	}
	if err := p.checkChild(ctx, topic, true); err != nil {
		return nil, err
	}
	b := p.keys.bucketOf(topic)
	reply, err := peekTopicScript.Exec(ctx, p.client, p.keys.withTopics(b, topic),
		peekTopicScript.args(p.caller(), "", "topic", topic, "set", setName(s))).ToArray()
	if err != nil {
		return nil, wrapRedis("peek", err)
	}
	peeked := decodePeekTopicReply(reply)
	p.dropAliases(ctx, peeked.Expired) // of the jobs the peek expired
	if peeked.Status != replyOK {
		return nil, fmt.Errorf("peek %s in %q: %w", s, topic, job.ErrNotFound)
	}
	return parseJob(peeked.Job)
}

// listPreview is how much of each body a job list carries.
const listPreview = 200

// ListJobs returns up to limit of a topic's jobs in state s (Ready,
// Delayed, Reserved, Buried, Dead, Completed), after the first offset, in the state's
// order, each with the first bytes of its body; and how many the state holds.
func (p *Pool) ListJobs(ctx context.Context, topic string, s job.State, offset, limit int) ([]*job.Job, int, error) {
	if !s.IsStored() {
		return nil, 0, fmt.Errorf("list %s jobs: %w: no jobs are %s", topic, job.ErrInvalid, s)
	}
	b := p.keys.bucketOf(topic)
	r, err := jobListScript.Exec(ctx, p.client, p.keys.withTopics(b, topic), jobListScript.args(p.caller(), "", "topic", topic,
		"set", setName(s), "offset", strconv.Itoa(offset), "limit", strconv.Itoa(limit), "preview", strconv.Itoa(listPreview))).ToArray()
	if err != nil {
		return nil, 0, wrapRedis("list jobs", err)
	}
	listed := decodeJobListReply(r)
	var out []*job.Job
	for _, jv := range listed.Jobs {
		j, err := parseJob(jv)
		if err != nil {
			return nil, 0, fmt.Errorf("list jobs: %w", err)
		}
		out = append(out, j)
	}
	return out, int(listed.Total), nil
}
