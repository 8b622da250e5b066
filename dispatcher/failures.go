package dispatcher

import (
	"context"
	"fmt"

	"github.com/gmq/gmq/job"
)

// Jobs returns a page of a topic's jobs in one state, and how many the
// state holds (for the dashboard's job lists).
func (tp Topic) Jobs(ctx context.Context, s job.State, offset, limit int) ([]*job.Job, int, error) {
	topic := tp.name
	if err := job.ValidateTopic(topic); err != nil {
		return nil, 0, err
	}
	return tp.d.pool.ListJobs(ctx, topic, s, offset, limit)
}

// Retry makes a topic's jobs in state s (job.Dead or job.Completed; those
// ids, or all) ready again, dead ones with their failures forgotten,
// completed ones with their results, and returns how many. Queue work, as
// a kick.
func (tp Topic) Retry(ctx context.Context, s job.State, ids []string) (int, error) {
	topic := tp.name
	if err := tp.d.allow("retry "+s.String()+" jobs", reading); err != nil {
		return 0, err
	}
	if err := job.ValidateTopic(topic); err != nil {
		return 0, err
	}
	n, err := tp.d.pool.Retry(ctx, topic, s, ids)
	if n > 0 {
		tp.d.waiters.notify(topic, n)
	}
	return n, err
}

// PurgeParams are a purge's: the states whose jobs go, and whether
// reserved ones may (their consumers' acks then find them gone).
type PurgeParams struct {
	States       []job.State
	EvenReserved bool
}

// Purge removes a topic's jobs in p.States, in bounded steps, and returns
// how many; reserved jobs only with p.EvenReserved.
func (tp Topic) Purge(ctx context.Context, p PurgeParams) (int, error) {
	topic, states, force := tp.name, p.States, p.EvenReserved
	if err := tp.d.allow("purge", writing); err != nil {
		return 0, err
	}
	if err := job.ValidateTopic(topic); err != nil {
		return 0, err
	}
	if len(states) == 0 {
		return 0, fmt.Errorf("%w: purge needs at least one state", job.ErrInvalid)
	}
	for _, s := range states {
		if s == job.Reserved && !force {
			return 0, fmt.Errorf("%w: purging reserved jobs takes their consumers' work away: say force", job.ErrInvalid)
		}
	}
	if _, ok := tp.d.alias(topic); ok {
		return 0, nil
	}
	return tp.d.pool.Purge(ctx, topic, states...)
}
