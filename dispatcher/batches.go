package dispatcher

import (
	"context"
	"fmt"

	"github.com/gmq/gmq/job"
	"github.com/gmq/gmq/pool"
)

// CreateBatch creates a batch (docs/workflows.md, Batches) and pushes its
// jobs, each checked as a push is; its callbacks are checked as follow-ups
// are. It returns the batch's id and its jobs' ids, in order.
func (d *Dispatcher) CreateBatch(ctx context.Context, s job.BatchSpec) (uint64, []job.Pushed, error) {
	if err := d.allow("push", writing); err != nil {
		return 0, nil, err
	}
	if err := job.CheckBatch(s); err != nil {
		return 0, nil, err
	}
	if err := d.validateMembers(s.Jobs); err != nil {
		return 0, nil, err
	}
	for name, c := range map[string]*job.Spec{"on_complete": s.OnComplete, "on_success": s.OnSuccess, "on_death": s.OnDeath} {
		if c == nil {
			continue
		}
		err := d.validateFollowUp(*c)
		if _, alias := d.alias(c.Topic); err == nil && alias {
			err = fmt.Errorf("%w: %q is an alias: a callback names one topic", job.ErrInvalid, c.Topic)
		}
		if err != nil {
			return 0, nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	id, got, err := d.pool.CreateBatch(ctx, s)
	if err != nil {
		return 0, nil, err
	}
	return id, d.membersPushed(s.Jobs, got), nil
}

// AddToBatch pushes jobs into batch id (open, or closed and not finished).
func (d *Dispatcher) AddToBatch(ctx context.Context, id uint64, jobs []job.Spec) ([]job.Pushed, error) {
	if err := d.allow("push", writing); err != nil {
		return nil, err
	}
	if err := job.CheckBatchJobs(jobs); err != nil {
		return nil, err
	}
	if err := d.validateMembers(jobs); err != nil {
		return nil, err
	}
	got, err := d.pool.AddToBatch(ctx, id, jobs)
	if err != nil {
		return nil, err
	}
	return d.membersPushed(jobs, got), nil
}

// CloseBatch closes batch id.
func (d *Dispatcher) CloseBatch(ctx context.Context, id uint64) error {
	if err := d.allow("close a batch", writing); err != nil {
		return err
	}
	return d.pool.CloseBatch(ctx, id)
}

// CancelBatch cancels batch id and its members that have not ended; it
// says how many were asked to cancel.
func (d *Dispatcher) CancelBatch(ctx context.Context, id uint64) (int, error) {
	if err := d.allow("cancel a batch", writing); err != nil {
		return 0, err
	}
	return d.pool.CancelBatch(ctx, id)
}

// Batch reads batch id.
func (d *Dispatcher) Batch(ctx context.Context, id uint64) (job.Batch, error) {
	if err := d.allow("read a batch", reading); err != nil {
		return job.Batch{}, err
	}
	return d.pool.Batch(ctx, id)
}

// Batches lists the batches kept, newest first (pool.Batches).
func (d *Dispatcher) Batches(ctx context.Context, offset, limit int) ([]job.Batch, int64, error) {
	if err := d.allow("list batches", reading); err != nil {
		return nil, 0, err
	}
	return d.pool.Batches(ctx, offset, limit)
}

// validateMembers checks a batch's jobs as pushes, none to an alias (a
// member is one job), no two with one client id or unique key.
func (d *Dispatcher) validateMembers(jobs []job.Spec) error {
	ids, keys := map[string]int{}, map[[2]string]int{}
	for i, j := range jobs {
		err := d.validate(j)
		if _, alias := d.alias(j.Topic); err == nil && alias {
			err = fmt.Errorf("%w: %q is an alias: a batch's job goes to one topic", job.ErrInvalid, j.Topic)
		}
		if err != nil {
			return fmt.Errorf("jobs[%d]: %w", i, err)
		}
		if k, dup := ids[j.ClientID]; dup && j.ClientID != "" {
			return fmt.Errorf("jobs[%d]: %w: its id %q is jobs[%d]'s too", i, job.ErrInvalid, j.ClientID, k)
		}
		ids[j.ClientID] = i
		if j.Unique != nil {
			tk := [2]string{j.Topic, j.Unique.Key}
			if k, dup := keys[tk]; dup {
				return fmt.Errorf("jobs[%d]: %w: its unique key %q is jobs[%d]'s too", i, job.ErrInvalid, j.Unique.Key, k)
			}
			keys[tk] = i
		}
	}
	return nil
}

// membersPushed wakes the consumers or timers of the members pushed, and
// returns their ids.
func (d *Dispatcher) membersPushed(jobs []job.Spec, got []pool.Pushed) []job.Pushed {
	out := make([]job.Pushed, len(got))
	for i, g := range got {
		d.pushed(jobs[i], g)
		out[i] = job.Pushed{ID: g.ID, ClientID: jobs[i].ClientID}
	}
	return out
}
