package pool

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"

	"github.com/gmq/gmq/job"
)

// Fail records a consumer's failure of a job it holds (fenced by attempt
// when > 0, as an ack): the job waits out its retry policy's backoff
// (delayed), or, past the policy's max_attempts, goes to its topic's dead
// set. It returns the job as it now is.
func (p *Pool) Fail(ctx context.Context, id string, attempt int, reason string) (*job.Job, error) {
	r := strconv.FormatFloat(rand.Float64(), 'f', 6, 64) // the jitter's share: scripts have no randomness of their own
	reply, err := p.onJob(ctx, "fail", id, attempt, p.scripted(failScript, "attempt", strconv.Itoa(attempt), "error", reason, "r", r))
	if err != nil {
		return nil, err
	}
	failed := decodeFailReply(reply)
	p.dropAliases(ctx, failed.Dropped) // of the dead jobs max_dead dropped
	j, err := parseJob(failed.Job)
	if err != nil {
		return nil, fmt.Errorf("fail job %s: %w", id, err)
	}
	return j, nil
}

// deadStep is the most jobs one retry script call revives.
const deadStep = 500

// RetryDead puts a topic's dead jobs back to ready with their failures
// forgotten: Retry of the dead set.
func (p *Pool) RetryDead(ctx context.Context, topic string, ids []string) (int, error) {
	return p.Retry(ctx, topic, job.Dead, ids)
}

// Retry makes a topic's jobs in state s ready again: dead ones with their
// failures forgotten, completed and cancelled ones (pushed again) with
// their results forgotten; those named by ids (others, and ids of other topics or
// states, are skipped), or all of them (ids empty) in bounded steps, a
// retry cut short by a crash finished by running it again. It returns how
// many it retried.
func (p *Pool) Retry(ctx context.Context, topic string, s job.State, ids []string) (int, error) {
	if s != job.Dead && s != job.Completed && s != job.Cancelled {
		return 0, fmt.Errorf("%w: only dead, completed and cancelled jobs are retried, not %s ones", job.ErrInvalid, s)
	}
	set := s.String()
	b := p.keys.bucketOf(topic)
	keys := p.keys.withTopics(b, topic)
	if len(ids) > 0 {
		args := deadRetryScript.args(p.caller(), "", "topic", topic, "set", set, "n", "0")
		fixed := len(args)
		for _, id := range ids {
			n, err := p.Resolve(ctx, id)
			if err != nil || int(n%uint64(p.opts.Buckets)) != b {
				continue // not found, or another topic's
			}
			args = append(args, member(n))
		}
		if len(args) == fixed {
			return 0, nil
		}
		n, err := deadRetryScript.Exec(ctx, p.client, keys, args).AsInt64()
		return int(n), wrapRedis("retry "+set+" jobs", err)
	}
	done := 0
	for {
		n, err := deadRetryScript.Exec(ctx, p.client, keys, deadRetryScript.args(p.caller(), "", "topic", topic, "set", set, "n", strconv.Itoa(deadStep))).AsInt64()
		done += int(n)
		if err != nil {
			return done, wrapRedis("retry "+set+" jobs", err)
		}
		if n < deadStep {
			return done, nil
		}
	}
}
