package pool

// The pops: of the first topic with a job, a take, several jobs, the best
// of several topics (beanstalkd's reserve), and an ack then a pop.

import (
	"context"
	"fmt"
	"strconv"
	"sync"
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
		r := decodePopReply(reply)
		if r.Status == replyOK {
			return p.popped(ctx, r)
		}
		first = first.sooner(r)
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
		r := decodePopReply(reply)
		switch r.Status {
		case replyJobs:
			k := int(r.Count)
			if len(r.Jobs) != k {
				return got, fmt.Errorf("pop: %d jobs in a reply of %d fields", k, len(reply))
			}
			for _, jv := range r.Jobs {
				j, err := p.reserved(ctx, jv)
				if err != nil {
					return got, fmt.Errorf("pop: %w", err)
				}
				if got.Job == nil {
					got.Job = j
				} else {
					got.Rest = append(got.Rest, j)
				}
			}
			got.More = r.More
			n -= k
			if k == chunk && n > 0 {
				continue // these topics may hold more
			}
		case replyOK:
			return got, fmt.Errorf("pop: unexpected reply %v", reply)
		default:
			first = first.sooner(r)
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
// first peeked, every bucket at once (one round trip, not one a bucket),
// then the best one's bucket is popped; if another consumer took that job
// meanwhile, the next best is taken.
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
	if len(order) > 1 {
		if got, done, err := p.popBestPlain(ctx, order, groups); done {
			return got, err
		}
	}
	for range 3 {
		b, first := order[0], noOpening
		if len(order) > 1 {
			peeks, err := p.peekBuckets(ctx, order, groups)
			if err != nil {
				return Popped{}, err
			}
			var bestPri int64
			var bestMember string
			found := false
			for k, reply := range peeks {
				peek := decodePopReply(reply)
				if peek.Status != replyPeek {
					first = first.sooner(peek)
					continue
				}
				pri, m := peek.Priority, peek.Member
				if !found || pri < bestPri || (pri == bestPri && m < bestMember) {
					b, bestPri, bestMember, found = order[k], pri, m, true
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
		r := decodePopReply(reply)
		if r.Status == replyOK {
			return p.popped(ctx, r)
		}
		if len(order) == 1 {
			return first.sooner(r).popped(), nil
		}
	}
	return Popped{}, nil // lost every race: the caller waits and tries again
}

// peekBuckets peeks each bucket of order over its topics in groups, all at
// once, and returns their replies in order's; the first error if any failed.
func (p *Pool) peekBuckets(ctx context.Context, order []int, groups map[int][]string) ([][]rueidis.RedisMessage, error) {
	replies, errs := make([][]rueidis.RedisMessage, len(order)), make([]error, len(order))
	var wg sync.WaitGroup
	for k, b := range order {
		wg.Go(func() { replies[k], errs[k] = p.popOp(ctx, popPeek, b, groups[b]) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return replies, nil
}

// popOp is one pop in bucket b's batch, in mode (popFirst, popBest, popPeek, popTake)
// over a group of the bucket's topics.
func (p *Pool) popOp(ctx context.Context, mode string, b int, group []string) ([]rueidis.RedisMessage, error) {
	if err := p.checkChildren(ctx, group, true); err != nil {
		return nil, err
	}
	more := p.askMore()
	reply, err := p.batchOp(ctx, b, &op{kind: opPop, topics: group, args: lua.OpArgs(opPop, "mode", mode, "more", more),
		plain: plainPop(mode, group, more)})
	return reply, wrapRedis("pop", err)
}

// popped reads a successful pop's reply.
func (p *Pool) popped(ctx context.Context, r popReply) (Popped, error) {
	j, err := p.reserved(ctx, r.Job)
	if err != nil {
		return Popped{}, fmt.Errorf("pop: %w", err)
	}
	return Popped{Job: j, More: r.More}, nil
}

// reserved reads a job just reserved: it remembers its topic and, if the
// reservation deleted it (TTR 0), drops its client id.
func (p *Pool) reserved(ctx context.Context, r jobValues) (*job.Job, error) {
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
func (p *Pool) AckAndPop(ctx context.Context, id string, attempt int, result string, topics []string) (Popped, error) {
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
			if _, err := p.deleteNumber(ctx, n, attempt, deleteAck, result); err != nil {
				return Popped{}, err
			}
			got, err := p.Pop(ctx, topics)
			if err != nil {
				return Popped{}, &job.AckedError{Err: err}
			}
			return got, nil
		}
	}
	more := p.askMore()
	reply, err := p.onNumber(ctx, "ack", n, attempt, func(ctx context.Context, b int, m, topic string) ([]rueidis.RedisMessage, error) {
		return p.batchOp(ctx, b, &op{kind: opAckPop, topics: append([]string{topic}, topics...),
			args:  lua.OpArgs(opAckPop, "member", m, "attempt", strconv.Itoa(attempt), "more", more, "result", result),
			plain: plainAckPop(topic, m, attempt, result, topics, more)})
	})
	if err != nil {
		return Popped{}, err
	}
	if decodeAckPopReply(reply).Status == replyThen { // the job has follow-ups of its own: followups.lua acks it, then a pop
		if _, err := p.ackNumberPushing(ctx, n, attempt, result, nil); err != nil {
			return Popped{}, err
		}
		got, err := p.Pop(ctx, topics)
		if err != nil {
			return Popped{}, &job.AckedError{Err: err}
		}
		return got, nil
	}
	acked := decodeAckPopReply(reply)
	p.dropAck(ctx, acked.CID, n, acked.Dropped)
	popped := decodePopReply(acked.Pop)
	if popped.Status == replyOK {
		return p.popped(ctx, popped)
	}
	return noOpening.sooner(popped).popped(), nil
}
