package dispatcher

import (
	"context"
	"fmt"

	"github.com/gmq/gmq/job"
)

// ListJobs returns a page of a topic's jobs in one state, and how many the
// state holds (for the dashboard's job lists).
func (d *Dispatcher) ListJobs(ctx context.Context, topic string, s job.State, offset, limit int) ([]*job.Job, int, error) {
	if err := job.ValidateTopic(topic); err != nil {
		return nil, 0, err
	}
	return d.pool.ListJobs(ctx, topic, s, offset, limit)
}

// Retry makes a topic's jobs in state s (job.Dead or job.Completed; those
// ids, or all) ready again, dead ones with their failures forgotten,
// completed ones with their results, and returns how many. Queue work, as
// a kick.
func (d *Dispatcher) Retry(ctx context.Context, topic string, s job.State, ids []string) (int, error) {
	if err := d.allow("retry "+s.String()+" jobs", reading); err != nil {
		return 0, err
	}
	if err := job.ValidateTopic(topic); err != nil {
		return 0, err
	}
	n, err := d.pool.Retry(ctx, topic, s, ids)
	if n > 0 {
		d.waiters.notify(topic, n)
	}
	return n, err
}

// Purge removes a topic's jobs in the given states, in bounded steps, and
// returns how many. Reserved jobs only with force (their consumers' acks
// then find them gone).
func (d *Dispatcher) Purge(ctx context.Context, topic string, states []job.State, force bool) (int, error) {
	if err := d.allow("purge", writing); err != nil {
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
	if _, ok := d.alias(topic); ok {
		return 0, nil
	}
	return d.pool.Purge(ctx, topic, states...)
}
