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

// Popped is the outcome of a pop.
type Popped struct {
	Job  *job.Job   // nil when no listed topic had a ready job
	Rest []*job.Job // PopN's jobs after Job, in the order they were popped
	More bool       // the topic of the last job popped still has ready jobs
	// PauseWait, when no job was found, is how long until a paused topic that
	// holds ready jobs resumes, or a topic whose rate held its ready jobs
	// back gets its next token (0: none of either); WaitTopic is that topic.
	PauseWait time.Duration
	WaitTopic string
	// HeldBy, when no job was found, is a topic whose rate or max_reserved
	// held its ready jobs back ("": none did).
	HeldBy string
}

// Pop reserves the best ready job of the first listed topic that has one: the
// lowest priority number, FIFO within a priority. With a TTR of 0 the job is
// deleted as it is popped. Topics in one bucket are tried in one script; a
// list spanning buckets takes one script per run of same-bucket topics. It is
// not PopN(1): that measured 5-10% slower on the store's pop + ack (its
// reply is built and parsed as a list of jobs).
func (p *Pool) Pop(ctx context.Context, topics []string) (Popped, error) {
	return p.popFirst(ctx, popFirst, topics)
}

// Take is Pop for a consumer that takes the job for good (kestrel's plain
// get): the job is removed as it is popped, whatever its TTR, in the same
// script, as a TTR of 0 would.
func (p *Pool) Take(ctx context.Context, topics []string) (Popped, error) {
	return p.popFirst(ctx, popTake, topics)
}

// popFirst runs a pop in Pop's order (mode popFirst or popTake).
func (p *Pool) popFirst(ctx context.Context, mode string, topics []string) (Popped, error) {
	first := noOpening
	for start := 0; start < len(topics); {
		b := p.keys.bucketOf(topics[start])
		end := start + 1
		for end < len(topics) && p.keys.bucketOf(topics[end]) == b {
			end++
		}
		reply, err := p.popOp(ctx, mode, b, topics[start:end])
		if err != nil {
			return Popped{}, err
		}
		if strAt(reply, 0) == replyOK {
			return p.popped(ctx, reply)
		}
		first = first.sooner(reply)
		start = end
	}
	return first.popped(), nil
}

// Last is the last job popped, nil if none was.
func (p Popped) Last() *job.Job {
	if len(p.Rest) > 0 {
		return p.Rest[len(p.Rest)-1]
	}
	return p.Job
}

// popChunk is the most jobs one pop_n operation takes, so that a large
// batch pop never holds Redis for long.
const popChunk = 100

// PopN reserves up to n ready jobs in Pop's order, as many as are ready now:
// a batch consumer's pop. Each job is reserved as Pop reserves one; the pops
// of one bucket's topics are one operation per popChunk jobs.
func (p *Pool) PopN(ctx context.Context, topics []string, n int) (Popped, error) {
	var got Popped
	first := noOpening
	for start := 0; start < len(topics) && n > 0; {
		b := p.keys.bucketOf(topics[start])
		end := start + 1
		for end < len(topics) && p.keys.bucketOf(topics[end]) == b {
			end++
		}
		chunk := min(n, popChunk)
		reply, err := p.batch(ctx, b, opPopN, topics[start:end], lua.OpArgs(opPopN, "mode", popFirst, "n", strconv.Itoa(chunk), "more", p.askMore())...)
		if err != nil {
			if got.Job != nil {
				return got, nil // the jobs reserved so far are the consumer's: never strand them
			}
			return got, wrapRedis("pop", err)
		}
		switch strAt(reply, 0) {
		case replyJobs:
			k := int(intAt(reply, 2))
			if len(reply) != 3+k*jobFields {
				return got, fmt.Errorf("pop: %d jobs in a reply of %d fields", k, len(reply))
			}
			for i := range k {
				j, err := p.reserved(ctx, reply[3+i*jobFields:3+(i+1)*jobFields])
				if err != nil {
					return got, fmt.Errorf("pop: %w", err)
				}
				if got.Job == nil {
					got.Job = j
				} else {
					got.Rest = append(got.Rest, j)
				}
			}
			got.More = intAt(reply, 1) == 1
			n -= k
			if k == chunk && n > 0 {
				continue // these topics may hold more
			}
		case replyOK:
			return got, fmt.Errorf("pop: unexpected reply %v", reply)
		default:
			first = first.sooner(reply)
		}
		start = end
	}
	if got.Job == nil {
		got = first.popped()
	}
	return got, nil
}

// PopBest reserves the ready job with the lowest (priority, id) among all the
// listed topics, as beanstalkd's reserve does. Topics spanning buckets are
// first peeked bucket by bucket, then the best one's bucket is popped; if
// another consumer took that job meanwhile, the next best is taken.
func (p *Pool) PopBest(ctx context.Context, topics []string) (Popped, error) {
	groups := map[int][]string{}
	var order []int
	for _, t := range topics {
		b := p.keys.bucketOf(t)
		if groups[b] == nil {
			order = append(order, b)
		}
		groups[b] = append(groups[b], t)
	}
	for range 3 {
		b, first := order[0], noOpening
		if len(order) > 1 {
			var bestPri int64
			var bestMember string
			found := false
			for _, g := range order {
				reply, err := p.popOp(ctx, popPeek, g, groups[g])
				if err != nil {
					return Popped{}, err
				}
				if strAt(reply, 0) != replyPeek {
					first = first.sooner(reply)
					continue
				}
				pri, m := intAt(reply, 2), strAt(reply, 3)
				if !found || pri < bestPri || (pri == bestPri && m < bestMember) {
					b, bestPri, bestMember, found = g, pri, m, true
				}
			}
			if !found {
				return first.popped(), nil
			}
		}
		reply, err := p.popOp(ctx, popBest, b, groups[b])
		if err != nil {
			return Popped{}, err
		}
		if strAt(reply, 0) == replyOK {
			return p.popped(ctx, reply)
		}
		if len(order) == 1 {
			return first.sooner(reply).popped(), nil
		}
	}
	return Popped{}, nil // lost every race: the caller waits and tries again
}

// popOp is one pop in bucket b's batch, in mode (popFirst, popBest, popPeek, popTake)
// over a group of the bucket's topics.
func (p *Pool) popOp(ctx context.Context, mode string, b int, group []string) ([]rueidis.RedisMessage, error) {
	if err := p.checkChildren(ctx, group, true); err != nil {
		return nil, err
	}
	reply, err := p.batch(ctx, b, opPop, group, lua.OpArgs(opPop, "mode", mode, "more", p.askMore())...)
	return reply, wrapRedis("pop", err)
}

// popped reads a successful pop's reply.
func (p *Pool) popped(ctx context.Context, reply []rueidis.RedisMessage) (Popped, error) {
	j, err := p.reserved(ctx, reply[2:])
	if err != nil {
		return Popped{}, fmt.Errorf("pop: %w", err)
	}
	return Popped{Job: j, More: intAt(reply, 1) == 1}, nil
}

// reserved reads a job just reserved: it remembers its topic and, if the
// reservation deleted it (TTR 0), drops its client id.
func (p *Pool) reserved(ctx context.Context, r []rueidis.RedisMessage) (*job.Job, error) {
	j, err := parseJob(r)
	if err != nil {
		return nil, err
	}
	p.topicOf.put(j.ID, j.Topic)
	if j.State == job.Gone {
		p.dropAlias(ctx, j.ClientID, j.ID)
	}
	return j, nil
}

// AckAndPop acks a job (fenced by attempt when > 0) and pops the next job of
// topics in the consumer's order. When every topic is in the job's bucket it
// is one script; otherwise an ack, then a pop. A pop that would make a
// fanout child past its parent's limits is refused before anything is done
// (checkChildren); if the ack fails, nothing is popped; if the pop fails
// after the ack, the error is a *job.AckedError.
func (p *Pool) AckAndPop(ctx context.Context, id string, attempt int, topics []string) (Popped, error) {
	if err := p.checkChildren(ctx, topics, true); err != nil {
		return Popped{}, err // before the ack: a pop refused refuses the whole call
	}
	n, err := p.Resolve(ctx, id)
	if err != nil {
		return Popped{}, err
	}
	b := int(n % uint64(p.opts.Buckets))
	for _, t := range topics {
		if p.keys.bucketOf(t) != b {
			if err := p.deleteNumber(ctx, n, attempt, deleteAny); err != nil {
				return Popped{}, err
			}
			got, err := p.Pop(ctx, topics)
			if err != nil {
				return Popped{}, &job.AckedError{Err: err}
			}
			return got, nil
		}
	}
	reply, err := p.onNumber(ctx, "ack", n, attempt, p.batched(opAckPop, topics, "attempt", strconv.Itoa(attempt), "more", p.askMore()))
	if err != nil {
		return Popped{}, err
	}
	p.dropAlias(ctx, strAt(reply, 1), n)
	if strAt(reply, 2) == replyOK {
		return p.popped(ctx, reply[2:])
	}
	return noOpening.sooner(reply[2:]).popped(), nil
}

// ReserveJob reserves one job by id if it is ready, delayed or buried, in
// any topic, paused or not (beanstalkd's reserve-job). A reserved job gives
// ErrNotReserved's StateError.
func (p *Pool) ReserveJob(ctx context.Context, id string) (*job.Job, error) {
	reply, err := p.onJob(ctx, "reserve", id, 0, p.scripted(reserveJobScript))
	if err != nil {
		return nil, err
	}
	return p.reserved(ctx, reply[1:])
}

// DeleteUnreserved removes a job unless it is reserved (a StateError then),
// as beanstalkd's delete does for a job another connection holds.
func (p *Pool) DeleteUnreserved(ctx context.Context, id string) error {
	n, err := p.Resolve(ctx, id)
	if err != nil {
		return err
	}
	return p.deleteNumber(ctx, n, 0, deleteUnreserved)
}

// Delete removes a job in any state. With attempt > 0 it is an ack fenced to
// that delivery: ErrStale if the job was delivered again since.
func (p *Pool) Delete(ctx context.Context, id string, attempt int) error {
	n, err := p.Resolve(ctx, id)
	if err != nil {
		return err
	}
	return p.deleteNumber(ctx, n, attempt, deleteAny)
}

// deleteNumber is Delete of job n in a delete mode.
func (p *Pool) deleteNumber(ctx context.Context, n uint64, attempt int, mode string) error {
	reply, err := p.onNumber(ctx, "delete", n, attempt, p.batched(opDelete, nil, "attempt", strconv.Itoa(attempt), "mode", mode))
	if err != nil {
		return err
	}
	p.dropAlias(ctx, strAt(reply, 1), n)
	return nil
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
	return p.jobAfter(ctx, "release", id, attempt, p.scripted(releaseScript, strconv.Itoa(attempt), priorityArg(pri),
		strconv.FormatInt(millis(delay), 10), ""))
}

// GiveBack makes a reserved job ready again, unchanged and without counting a
// release: the job of a consumer that went away (beanstalkd's closed connection).
func (p *Pool) GiveBack(ctx context.Context, id string, attempt int) (*job.Job, error) {
	return p.jobAfter(ctx, "release", id, attempt, p.scripted(releaseScript, strconv.Itoa(attempt), priorityArg(job.KeepPriority), "0", "uncounted"))
}

// Bury parks a reserved job, with a new priority (or job.KeepPriority), until
// it is kicked, and returns the job as it now is.
func (p *Pool) Bury(ctx context.Context, id string, attempt int, pri int64) (*job.Job, error) {
	return p.jobAfter(ctx, "bury", id, attempt, p.scripted(buryScript, strconv.Itoa(attempt), priorityArg(pri)))
}

// Touch restarts a reserved job's TTR and returns the job, its new deadline in Due.
func (p *Pool) Touch(ctx context.Context, id string, attempt int) (*job.Job, error) {
	return p.jobAfter(ctx, "touch", id, attempt, p.scripted(touchScript, strconv.Itoa(attempt)))
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
	return p.jobAfter(ctx, "update", id, 0, p.scripted(updateJobScript, delay, pri, body, given, asJSON))
}

// jobAfter runs a transition on one job and reads the job its script returns.
func (p *Pool) jobAfter(ctx context.Context, op string, id string, attempt int, call jobCall) (*job.Job, error) {
	reply, err := p.onJob(ctx, op, id, attempt, call)
	if err != nil {
		return nil, err
	}
	j, err := parseJob(reply[1:])
	if err != nil {
		return nil, fmt.Errorf("%s job %s: %w", op, id, err)
	}
	return j, nil
}

// A jobCall runs one operation on job m of bucket b, given the job's topic.
type jobCall func(ctx context.Context, b int, m, topic string) ([]rueidis.RedisMessage, error)

// scripted is a jobCall of its own script, whose ARGV is origin, member,
// topic, then extra.
func (p *Pool) scripted(script *function, extra ...string) jobCall {
	return func(ctx context.Context, b int, m, topic string) ([]rueidis.RedisMessage, error) {
		args := append([]string{p.caller(), m, topic}, extra...)
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
		switch strAt(reply, 0) {
		case replyOK:
			return reply, nil
		case replyTopic:
			topic = strAt(reply, 1)
			p.topicOf.put(n, topic)
			continue
		case replyNotFound:
			return nil, fmt.Errorf("%s job %d: %w", op, n, job.ErrNotFound)
		case replyStale:
			return nil, fmt.Errorf("%s job %d: %w", op, n, &job.StaleError{Attempt: attempt, Current: int(intAt(reply, 1))})
		case replyState:
			return nil, fmt.Errorf("job %d: %w", n, &job.StateError{Op: op, State: job.State(intAt(reply, 1))})
		case replyFull: // in the job's terms, without its number (job.Outcome)
			return nil, fmt.Errorf("%w: its topic's %s is %d", job.ErrFull, strAt(reply, 1), intAt(reply, 2))
		case replyTooBig:
			return nil, fmt.Errorf("%w: its topic's max_item_size is %d", job.ErrTooBig, intAt(reply, 1))
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
		reply, err := kickScript.Exec(ctx, p.client, keys, []string{p.caller(), topic, strconv.Itoa(batch), kind}).ToArray()
		if err != nil {
			return kicked, wrapRedis("kick", err)
		}
		got := int(intAt(reply, 0))
		kicked += got
		kind = strAt(reply, 1)
		if got < batch {
			break
		}
	}
	return kicked, nil
}

// Pause stops pops from a topic for d (0 resumes it). A topic that holds no
// job gives ErrNotFound, unless create is set (a beanstalkd tube that exists
// because a connection uses it).
func (p *Pool) Pause(ctx context.Context, topic string, d time.Duration, create bool) (until time.Time, err error) {
	b := p.keys.bucketOf(topic)
	flag := ""
	if create {
		flag = "1"
	}
	reply, err := pauseScript.Exec(ctx, p.client, p.keys.withTopics(b, topic),
		[]string{p.caller(), topic, strconv.FormatInt(millis(d), 10), flag}).ToArray()
	if err != nil {
		return time.Time{}, wrapRedis("pause", err)
	}
	if strAt(reply, 0) != replyOK {
		return time.Time{}, fmt.Errorf("pause topic %q: %w", topic, job.ErrNotFound)
	}
	if ms := intAt(reply, 1); ms > 0 {
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
	reply, err := peekScript.Exec(ctx, p.client, p.keys.bucket(b), []string{p.caller(), member(n)}).ToArray()
	if err != nil {
		return nil, wrapRedis("peek", err)
	}
	if strAt(reply, 0) != replyOK {
		return nil, fmt.Errorf("peek job %d: %w", n, job.ErrNotFound)
	}
	return parseJob(reply[1:])
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
		[]string{p.caller(), topic, setName(s)}).ToArray()
	if err != nil {
		return nil, wrapRedis("peek", err)
	}
	if strAt(reply, 0) != replyOK {
		p.dropAliases(ctx, reply[1:]) // of the jobs the peek expired
		return nil, fmt.Errorf("peek %s in %q: %w", s, topic, job.ErrNotFound)
	}
	p.dropAliases(ctx, reply[min(len(reply), 1+jobFields):])
	return parseJob(reply[1:])
}

// listPreview is how much of each body a job list carries.
const listPreview = 200

// ListJobs returns up to limit of a topic's jobs in state s (Ready,
// Delayed, Reserved, Buried, Dead), after the first offset, in the state's
// order, each with the first bytes of its body; and how many the state holds.
func (p *Pool) ListJobs(ctx context.Context, topic string, s job.State, offset, limit int) ([]*job.Job, int, error) {
	if s < job.Delayed || s > job.Dead {
		return nil, 0, fmt.Errorf("list %s jobs: %w: no jobs are %s", topic, job.ErrInvalid, s)
	}
	b := p.keys.bucketOf(topic)
	r, err := jobListScript.Exec(ctx, p.client, p.keys.withTopics(b, topic), []string{p.caller(), topic, setName(s),
		strconv.Itoa(offset), strconv.Itoa(limit), strconv.Itoa(listPreview)}).ToArray()
	if err != nil {
		return nil, 0, wrapRedis("list jobs", err)
	}
	var out []*job.Job
	for i := 1; i+jobFields <= len(r); i += jobFields {
		j, err := parseJob(r[i : i+jobFields])
		if err != nil {
			return nil, 0, fmt.Errorf("list jobs: %w", err)
		}
		out = append(out, j)
	}
	return out, int(intAt(r, 0)), nil
}
