package dispatcher

import (
	"context"
	"fmt"

	"github.com/gmq/gmq/job"
	"github.com/gmq/gmq/pool"
)

// Batches are groups of jobs pushed together whose ends are counted, with
// callbacks when they are all done (docs/workflows.md, Batches;
// pool/batches.go). One of the dispatcher's concerns, apart from its core
// (Dispatcher.Batches).
type Batches struct {
	d     *Dispatcher
	store BatchStore
}

// Batches is the dispatcher's batches.
func (d *Dispatcher) Batches() Batches { return Batches{d, d.pool} }

// Create creates a batch (docs/workflows.md, Batches) and pushes its
// jobs, each checked as a push is; its callbacks are checked as follow-ups
// are. It returns the batch's id and its jobs' ids, in order.
func (b Batches) Create(ctx context.Context, s job.BatchSpec) (uint64, []job.Pushed, error) {
	if err := b.d.allow("push", writing); err != nil {
		return 0, nil, err
	}
	if err := job.CheckBatch(s); err != nil {
		return 0, nil, err
	}
	if err := b.d.validateMembers(s.Jobs); err != nil {
		return 0, nil, err
	}
	for name, c := range map[string]*job.Spec{"on_complete": s.OnComplete, "on_success": s.OnSuccess, "on_death": s.OnDeath} {
		if c == nil {
			continue
		}
		err := b.d.validateFollowUp(*c)
		if _, alias := b.d.alias(c.Topic); err == nil && alias {
			err = fmt.Errorf("%w: %q is an alias: a callback names one topic", job.ErrInvalid, c.Topic)
		}
		if err != nil {
			return 0, nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	id, got, err := b.store.CreateBatch(ctx, s)
	if err != nil {
		return 0, nil, err
	}
	return id, b.d.membersPushed(s.Jobs, got), nil
}

// Add pushes jobs into batch id (open, or closed and not finished).
func (b Batches) Add(ctx context.Context, id uint64, jobs []job.Spec) ([]job.Pushed, error) {
	if err := b.d.allow("push", writing); err != nil {
		return nil, err
	}
	if err := job.CheckBatchJobs(jobs); err != nil {
		return nil, err
	}
	if err := b.d.validateMembers(jobs); err != nil {
		return nil, err
	}
	got, err := b.store.AddToBatch(ctx, id, jobs)
	if err != nil {
		return nil, err
	}
	return b.d.membersPushed(jobs, got), nil
}

// Close closes batch id.
func (b Batches) Close(ctx context.Context, id uint64) error {
	if err := b.d.allow("close a batch", writing); err != nil {
		return err
	}
	return b.store.CloseBatch(ctx, id)
}

// Cancel cancels batch id and its members that have not ended; it
// says how many were asked to cancel.
func (b Batches) Cancel(ctx context.Context, id uint64) (int, error) {
	if err := b.d.allow("cancel a batch", writing); err != nil {
		return 0, err
	}
	return b.store.CancelBatch(ctx, id)
}

// Get reads batch id.
func (b Batches) Get(ctx context.Context, id uint64) (job.Batch, error) {
	if err := b.d.allow("read a batch", reading); err != nil {
		return job.Batch{}, err
	}
	return b.store.Batch(ctx, id)
}

// List lists the batches kept, newest first (pool.Batches).
func (b Batches) List(ctx context.Context, offset, limit int) ([]job.Batch, int64, error) {
	if err := b.d.allow("list batches", reading); err != nil {
		return nil, 0, err
	}
	return b.store.Batches(ctx, offset, limit)
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
