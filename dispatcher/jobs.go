package dispatcher

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/gmq/gmq/job"
	"github.com/gmq/gmq/pool"
)

// Push validates and stores a job. It returns the job's number; a ready job
// wakes a consumer waiting on its topic, a delayed one nudges its bucket.
func (d *Dispatcher) Push(ctx context.Context, j job.Spec) (job.Pushed, error) {
	if err := d.allow("push", writing); err != nil {
		return job.Pushed{}, err
	}
	if err := d.validate(j); err != nil {
		return job.Pushed{}, err
	}
	if _, ok := d.alias(j.Topic); ok {
		ids, err := d.store(ctx, []job.Spec{j})
		return ids[0], err
	}
	got, err := d.pool.Push(ctx, j)
	if err != nil {
		return job.Pushed{}, err
	}
	d.pushed(j, got)
	if got.Unique != "" {
		return job.Pushed{ID: got.ID, ClientID: got.ClientID, Unique: got.Unique}, nil
	}
	return job.Pushed{ID: got.ID, ClientID: j.ClientID}, nil
}

// pushed tells the waiting consumers or the bucket's timer about a new job.
func (d *Dispatcher) pushed(j job.Spec, got pool.Pushed) {
	if !got.Due.IsZero() {
		d.nudge(j.Topic, got.Due, got.Now) // the children share the topic's bucket
		return
	}
	if got.Kept {
		d.waiters.notify(j.Topic, 1)
	}
	for _, child := range got.Children {
		d.waiters.notify(child, 1)
	}
}

// PushBatch validates every job first, so a bad one (or a client id given
// twice) rejects the whole batch with nothing stored, then stores them at once, numbered in the batch's
// order. If storing fails part way (Redis went away), the ids of the jobs
// that were stored come back with the error, in the batch's order, 0 for the
// others. A job pushed to an alias is a copy for each of its destinations,
// stored with the batch; its id is the first destination's.
func (d *Dispatcher) PushBatch(ctx context.Context, jobs []job.Spec) ([]job.Pushed, error) {
	if err := d.allow("push", writing); err != nil {
		return nil, err
	}
	first := make(map[string]int)       // client id -> the job that has it
	firstKey := make(map[[2]string]int) // topic and unique key -> the job that has it
	for i, j := range jobs {
		if err := d.validate(j); err != nil {
			return nil, fmt.Errorf("job %d: %w", i, err)
		}
		if j.Unique != nil {
			// A batch's jobs are stored concurrently: which of two took the key would be chance.
			tk := [2]string{j.Topic, j.Unique.Key}
			if k, dup := firstKey[tk]; dup {
				return nil, fmt.Errorf("job %d: %w: its unique key %q is job %d's too; a batch may not repeat a key", i, job.ErrInvalid, j.Unique.Key, k)
			}
			firstKey[tk] = i
		}
		if j.ClientID == "" {
			continue
		}
		if k, dup := first[j.ClientID]; dup {
			return nil, fmt.Errorf("job %d: %w: its id %q is job %d's too; a batch may not repeat an id", i, job.ErrInvalid, j.ClientID, k)
		}
		first[j.ClientID] = i
	}
	return d.store(ctx, jobs)
}

// store pushes validated jobs with one pool.PushBatch, an alias's job as a
// copy for each of its destinations (they may live in different buckets: the
// copies are stored each on its own, so one failing leaves the others). It
// returns what each push did (its job's id, an alias's: its first stored
// copy's; a unique push's: the waiting job it changed; ID 0: not stored)
// and the first failure, named by the job's place in jobs.
func (d *Dispatcher) store(ctx context.Context, jobs []job.Spec) ([]job.Pushed, error) {
	specs, owner := d.expandAliases(jobs)
	got, errs := d.pool.PushBatch(ctx, specs)
	ids := make([]job.Pushed, len(jobs))
	var firstErr error
	for k, err := range errs {
		i := k
		if owner != nil {
			i = owner[k]
		}
		var held *job.UniqueError
		if owner != nil && errors.As(err, &held) {
			// A destination's unique_from holds this body: the job that holds
			// it stands for this copy (as beanstalkd's put answers), so the
			// alias's push is not refused while its other copies are stored.
			if ids[i].ID == 0 {
				ids[i] = job.Pushed{ID: held.ID, ClientID: held.ClientID}
			}
			continue
		}
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("job %d: %w", i, err)
				if specs[k].Topic != jobs[i].Topic {
					firstErr = fmt.Errorf("job %d: alias %q: destination %q: %w", i, jobs[i].Topic, specs[k].Topic, err)
				}
			}
			continue
		}
		if ids[i].ID == 0 { // numbers start above 0: unset, this is the job's first stored copy
			ids[i] = job.Pushed{ID: got[k].ID, ClientID: jobs[i].ClientID}
			if got[k].Unique != "" {
				ids[i] = job.Pushed{ID: got[k].ID, ClientID: got[k].ClientID, Unique: got[k].Unique}
			}
		}
		d.pushed(specs[k], got[k])
	}
	return ids, firstErr
}

// expandAliases is jobs with each job to an alias a copy for each of its
// destinations; owner[k] is the job specs[k] came from (nil, and specs is
// jobs, when none names an alias).
func (d *Dispatcher) expandAliases(jobs []job.Spec) (specs []job.Spec, owner []int) {
	if !slices.ContainsFunc(jobs, func(j job.Spec) bool { _, ok := d.alias(j.Topic); return ok }) {
		return jobs, nil
	}
	for i, j := range jobs {
		dests, ok := d.alias(j.Topic)
		if !ok {
			dests = []string{j.Topic}
		}
		for _, dest := range dests {
			c := j
			c.Topic = dest
			specs, owner = append(specs, c), append(owner, i)
		}
	}
	return specs, owner
}

// validate checks a job to push, and its follow-ups (Then, OnDead).
func (d *Dispatcher) validate(j job.Spec) error {
	if err := d.validateOne(j); err != nil {
		return err
	}
	if j.WithResult {
		return fmt.Errorf("%w: with_result is a follow-up's (an ack's push, a job's then): a job pushed has no finished job to take a result from", job.ErrInvalid)
	}
	return d.validateNested(j)
}

// validateOne checks a job to push, its follow-ups left out.
func (d *Dispatcher) validateOne(j job.Spec) error {
	if err := job.ValidateTopic(j.Topic); err != nil {
		return err
	}
	if dests, ok := d.alias(j.Topic); ok && j.ClientID != "" {
		return fmt.Errorf("%w: %q is an alias of %d topics: a push to it cannot carry an id", job.ErrInvalid, j.Topic, len(dests))
	}
	if j.ClientID != "" {
		if err := job.ValidateClientID(j.ClientID); err != nil {
			return err
		}
	}
	if j.Group != "" {
		if err := job.ValidateGroup(j.Group); err != nil {
			return err
		}
	}
	if j.Unique != nil {
		if dests, ok := d.alias(j.Topic); ok {
			return fmt.Errorf("%w: %q is an alias of %d topics: a push to it cannot be unique", job.ErrInvalid, j.Topic, len(dests))
		}
		if err := j.Unique.Check(); err != nil {
			return err
		}
	}
	if len(j.Body) > d.opts.MaxBody {
		return fmt.Errorf("%w: %d bytes, the limit is %d", job.ErrTooBig, len(j.Body), d.opts.MaxBody)
	}
	if j.Delay < 0 || j.TTR < 0 {
		return fmt.Errorf("%w: delay and TTR must not be negative", job.ErrInvalid)
	}
	if j.Retry != nil {
		if err := j.Retry.Check(); err != nil {
			return err
		}
	}
	if err := job.ValidateTraceParent(j.TraceParent); err != nil {
		return err
	}
	return job.CheckAfter(j)
}

// ReserveJob reserves one ready, delayed or buried job by id, in any topic.
func (d *Dispatcher) ReserveJob(ctx context.Context, id string) (*job.Job, error) {
	if err := d.allow("reserve", reading); err != nil {
		return nil, err
	}
	return d.pool.ReserveJob(ctx, id)
}

// Peek reads a job by its public id.
func (d *Dispatcher) Peek(ctx context.Context, id string) (*job.Job, error) {
	if err := d.allow("peek", reading); err != nil {
		return nil, err
	}
	return d.pool.Peek(ctx, id)
}

// Inspect is Peek for a look at one job (GET /api/v1/jobs/{id}, the
// dashboard's and gmq's job views): the job with its MaxAttempts known,
// from its topic's settings where its own retry policy does not say, or
// DefaultMaxAttempts. That is a round trip more, which a pop does not make.
func (d *Dispatcher) Inspect(ctx context.Context, id string) (*job.Job, error) {
	j, err := d.Peek(ctx, id)
	if err != nil || j.MaxAttempts != nil {
		return j, err
	}
	cfg, err := d.pool.TopicSettings(ctx, j.Topic)
	if err != nil {
		return nil, fmt.Errorf("job %s: its topic's max_attempts: %w", id, err)
	}
	n := job.DefaultMaxAttempts
	if v, ok := cfg["max_attempts"]; ok {
		if n, err = strconv.Atoi(v); err != nil {
			return nil, fmt.Errorf("job %s: its topic's max_attempts %q: %w", id, v, err)
		}
	}
	j.MaxAttempts = &n
	return j, nil
}

// placed wakes a consumer for a job made ready, or nudges the timer of a
// job made delayed.
func (d *Dispatcher) placed(j *job.Job) {
	switch j.State {
	case job.Ready:
		d.waiters.notify(j.Topic, 1)
	case job.Delayed:
		d.nudge(j.Topic, j.Due, j.Now)
	}
}

// Kick makes up to n of a topic's buried jobs ready, or if it has none, up to
// n of its delayed jobs. It returns how many it kicked.
func (tp Topic) Kick(ctx context.Context, n int) (int, error) {
	topic := tp.name
	if err := tp.d.allow("kick", reading); err != nil {
		return 0, err
	}
	if err := job.ValidateTopic(topic); err != nil {
		return 0, err
	}
	kicked, err := tp.d.pool.Kick(ctx, topic, n)
	if kicked > 0 {
		tp.d.waiters.notify(topic, kicked)
	}
	return kicked, err
}

// PauseParams are a pause's: how long, and what of a topic that holds no
// job.
type PauseParams struct {
	For time.Duration // how long pops stop; 0 resumes the topic now
	// EvenIfEmpty pauses a topic that holds no job (beanstalkd's pause-tube
	// of a tube only watched); without it that is job.ErrNotFound.
	EvenIfEmpty bool
}

// Pause stops pops from a topic for p.For, or resumes it (p.For 0), and
// returns when its pops start again.
func (tp Topic) Pause(ctx context.Context, p PauseParams) (time.Time, error) {
	topic, dur, create := tp.name, p.For, p.EvenIfEmpty
	if err := tp.d.allow("pause", reading); err != nil {
		return time.Time{}, err
	}
	if err := job.ValidateTopic(topic); err != nil {
		return time.Time{}, err
	}
	until, err := tp.d.pool.Pause(ctx, topic, pool.PauseParams{For: dur, EvenIfUnknown: create})
	if err == nil && until.IsZero() {
		tp.d.waiters.notify(topic, tp.d.waiters.len())
	}
	return until, err
}

// Peek reads the next ready, delayed or buried job of a topic.
func (tp Topic) Peek(ctx context.Context, s job.State) (*job.Job, error) {
	topic := tp.name
	if err := tp.d.allow("peek", reading); err != nil {
		return nil, err
	}
	if err := job.ValidateTopic(topic); err != nil {
		return nil, err
	}
	return tp.d.pool.PeekTopic(ctx, topic, s)
}

// Flush removes every job of a topic, in any state, in bounded steps
// (kestrel's flush), and returns how many it removed. The topic stays known.
func (tp Topic) Flush(ctx context.Context) (int, error) {
	topic := tp.name
	if err := tp.d.allow("flush", writing); err != nil {
		return 0, err
	}
	if err := job.ValidateTopic(topic); err != nil {
		return 0, err
	}
	if _, ok := tp.d.alias(topic); ok {
		return 0, nil // an alias holds nothing: ignored, as kestrel does
	}
	return tp.d.pool.Purge(ctx, topic, job.Stored...)
}

// FlushAll flushes every topic and returns how many jobs it removed.
func (d *Dispatcher) FlushAll(ctx context.Context) (int, error) {
	if err := d.allow("flush", writing); err != nil {
		return 0, err
	}
	topics, err := d.pool.Topics(ctx)
	if err != nil {
		return 0, err
	}
	total := 0
	for _, t := range topics {
		n, err := d.pool.Purge(ctx, t, job.Stored...)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// FlushExpired expires now the jobs of a topic whose time ran out (every
// topic's when topic is ""), as the bucket timers would a little later, and
// returns how many (kestrel's flush_expired and flush_all_expired). It is
// queue work, not a write: ReadOnly lets it run, as it lets the timers.
func (tp Topic) FlushExpired(ctx context.Context) (int, error) {
	topic := tp.name
	if err := tp.d.allow("flush expired", reading); err != nil {
		return 0, err
	}
	topics := []string{topic}
	if topic == "" {
		var err error
		if topics, err = tp.d.pool.Topics(ctx); err != nil {
			return 0, err
		}
	} else if err := job.ValidateTopic(topic); err != nil {
		return 0, err
	}
	total := 0
	for _, t := range topics {
		n, err := tp.d.pool.FlushExpired(ctx, t)
		total += n
		if err != nil {
			return total, err
		}
		if n > 0 {
			tp.d.buckets[tp.d.pool.BucketOf(t)].Nudge(time.Now()) // an expire_to outbox to move
		}
	}
	return total, nil
}

// Delete removes every job of a topic and then the topic itself, its
// pause and its totals (kestrel's delete), and returns how many jobs it
// removed.
func (tp Topic) Delete(ctx context.Context) (int, error) {
	topic := tp.name
	if err := tp.d.allow("delete topic", writing); err != nil {
		return 0, err
	}
	if err := job.ValidateTopic(topic); err != nil {
		return 0, err
	}
	if _, ok := tp.d.alias(topic); ok {
		return 0, nil // an alias holds nothing: ignored, as kestrel does
	}
	return tp.d.pool.DeleteTopic(ctx, topic)
}
