package dispatcher

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/gmq/gmq/job"
)

// Ack names one delivery to settle (ack, touch, release, bury, fail): a
// job's public id and, when > 0, the delivery (attempt) it was; with a
// Token, the delivery its pop handed out (see delivery).
type Ack struct {
	ID      string
	Attempt int
	Token   job.Delivery // zero: none
	// Result is what an ack (ActionAck, or a pop's After) answers: a JSON
	// value's compact text ("" none), kept where the job is kept completed.
	Result string
}

// Action is what Settle does to a job.
type Action uint8

const (
	// ActionAck ends a job its consumer finished: deleted, or completed
	// with Ack.Result where its topic keeps completed jobs.
	ActionAck Action = iota
	// ActionRelease gives a reserved job back, ready now or after Delay,
	// with Priority (job.KeepPriority: its own).
	ActionRelease
	// ActionBury sets a reserved job aside (buried) with Priority.
	ActionBury
	// ActionTouch starts a reserved job's TTR again.
	ActionTouch
	// ActionFail reports that the consumer failed the job, for Reason: it
	// waits its retry policy's backoff, or goes to its topic's dead set
	// past max_attempts.
	ActionFail
	// ActionGiveBack makes a job reserved by a consumer that went away ready
	// again, unchanged and without counting a release.
	ActionGiveBack
	// ActionDelete removes a job in any state, whatever its attempt.
	ActionDelete
	// ActionDeleteUnreserved removes a job unless it is reserved (then a
	// job.StateError), as beanstalkd's delete does for a job another
	// connection holds.
	ActionDeleteUnreserved
	// ActionKick makes a buried or delayed job ready.
	ActionKick
	// ActionProgress records a reserved job's Progress and a Log line and
	// starts its TTR again, as a touch does.
	ActionProgress
	// ActionCancel cancels a job: one waiting ends cancelled at once; a
	// reserved one when its consumer next touches, reports progress or
	// acks (job.ErrCancelled), or its TTR runs out.
	ActionCancel
)

// SettleParams is one Settle: the delivery (or, for a delete or a kick,
// just the job's id), the action, and what the action takes.
type SettleParams struct {
	Ack
	Action   Action
	Priority int64         // ActionRelease, ActionBury: the new priority, or job.KeepPriority
	Delay    time.Duration // ActionRelease
	Reason   string        // ActionFail
	Progress string        // ActionProgress: a JSON value's compact text ("" none)
	Log      string        // ActionProgress: a line of the job's log ("" none)
	// Push, with ActionAck, are follow-ups: jobs pushed once the ack
	// succeeds; Settle fills in their ids (FollowUps).
	Push *FollowUps
	// Kept, with ActionAck, is where Settle tells how long the job is kept
	// completed from now (0: deleted), for the ack's answer: its
	// keep_completed, or keep_results for an ack with a result
	// (docs/outcomes.md). nil: not asked.
	Kept *time.Duration
}

// Settle does p.Action to p's job and returns the job as it is after
// (nil when removed). A call on a delivery is fenced by its attempt (or
// token): job.ErrStale if the job was delivered again since. Finishing a
// reservation (ack, release, bury, touch, fail, give back) is let through
// by every server status; a delete or a kick is an operator's write, which
// a ReadOnly status refuses.
func (d *Dispatcher) Settle(ctx context.Context, p SettleParams) (*job.Job, error) {
	switch p.Action {
	case ActionDelete, ActionDeleteUnreserved:
		if err := d.allow("delete", writing); err != nil {
			return nil, err
		}
	case ActionKick:
		if err := d.allow("kick", reading); err != nil {
			return nil, err
		}
	case ActionCancel:
		if err := d.allow("cancel", writing); err != nil {
			return nil, err
		}
	case ActionAck, ActionRelease, ActionBury, ActionTouch, ActionFail, ActionGiveBack, ActionProgress:
	default:
		return nil, errUnknownAction(p.Action) // before any Redis call
	}
	a, err := d.delivery(ctx, p.Ack)
	if err != nil {
		return nil, err
	}
	var j *job.Job
	switch p.Action {
	case ActionAck:
		var kept time.Duration
		if p.Push != nil && len(p.Push.Jobs) > 0 {
			kept, err = d.ackPushing(ctx, a.ID, a.Attempt, p.Result, p.Push)
		} else {
			kept, err = d.pool.AckKept(ctx, a.ID, a.Attempt, p.Result)
		}
		if err == nil && p.Kept != nil {
			*p.Kept = kept
		}
		return nil, err
	case ActionDelete:
		return nil, d.pool.Delete(ctx, a.ID, 0)
	case ActionDeleteUnreserved:
		return nil, d.pool.DeleteUnreserved(ctx, a.ID)
	case ActionBury:
		return d.pool.Bury(ctx, a.ID, a.Attempt, p.Priority)
	case ActionTouch:
		return d.pool.Touch(ctx, a.ID, a.Attempt)
	case ActionProgress:
		return d.pool.Progress(ctx, a.ID, a.Attempt, p.Progress, p.Log)
	case ActionCancel:
		return d.pool.Cancel(ctx, a.ID)
	case ActionRelease:
		j, err = d.pool.Release(ctx, a.ID, a.Attempt, p.Priority, p.Delay)
	case ActionFail:
		j, err = d.pool.Fail(ctx, a.ID, a.Attempt, p.Reason)
		if err == nil && j.State == job.Dead {
			d.buckets[d.pool.BucketOf(j.Topic)].Nudge(time.Now()) // its on_dead follow-ups, if any: pushed now
		}
	case ActionGiveBack:
		j, err = d.pool.GiveBack(ctx, a.ID, a.Attempt)
	default: // ActionKick
		j, err = d.pool.KickJob(ctx, a.ID)
	}
	if err != nil {
		return nil, err
	}
	d.placed(j)
	return j, nil
}

// SettleMany settles several jobs, each on its own and all at once, so that
// their calls share script calls (a batch consumer's acks or fails);
// jobs[i] and errs[i] are ps[i]'s.
func (d *Dispatcher) SettleMany(ctx context.Context, ps []SettleParams) (jobs []*job.Job, errs []error) {
	jobs, errs = make([]*job.Job, len(ps)), make([]error, len(ps))
	var wg sync.WaitGroup
	for i, p := range ps {
		wg.Go(func() { jobs[i], errs[i] = d.Settle(ctx, p) })
	}
	wg.Wait()
	return jobs, errs
}

// errUnknownAction is a Settle with an action no constant names: a bug of
// its caller.
func errUnknownAction(a Action) error {
	return fmt.Errorf("%w: unknown action %d", job.ErrInvalid, a)
}
