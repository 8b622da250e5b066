package dispatcher

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/gmq/gmq/job"
)

// delivery turns a call on a delivery (an ack, touch, release, bury or
// fail) into the job and attempt to act on. Without a token that is a as
// given, as gmq always did. With one, it is the token's job, by number, at
// the token's attempt, so the call never reaches another job that a's id
// names now: a client id pushed again after Redis lost its data names a new
// job at attempt 1, which a late ack of the lost one would otherwise delete.
//
// The id must agree with the token: a number must be the token's (else
// job.ErrInvalid), and an attempt given must be the token's (job.ErrInvalid).
// A client id is resolved as the call itself would have resolved it (one
// HGET of its alias, which the call then skips, given the number), so a
// token adds no Redis command to a call whose id and token agree. When the
// client id names another job or none, the token's job is read: gone, the
// call is job.ErrNotFound (as a stale ack by number is); alive under another
// client id, job.ErrOtherJob. Reading it before acting is safe: a job's
// client id never changes, and a job gone in between makes the call itself
// answer not found.
func (d *Dispatcher) delivery(ctx context.Context, a Ack) (Ack, error) {
	t := a.Token
	if t.IsZero() {
		return a, nil
	}
	if a.Attempt != 0 && a.Attempt != t.Attempt {
		return a, fmt.Errorf("%w: attempt %d is not the token's (%s is attempt %d)", job.ErrInvalid, a.Attempt, t.Token(), t.Attempt)
	}
	byNumber := Ack{ID: strconv.FormatUint(t.ID, 10), Attempt: t.Attempt, Result: a.Result}
	if job.IsNumber(a.ID) {
		if n, err := strconv.ParseUint(a.ID, 10, 64); err != nil || n != t.ID {
			return a, fmt.Errorf("%w: job %s is not the token's job (%s is a delivery of job %d)", job.ErrInvalid, a.ID, t.Token(), t.ID)
		}
		return byNumber, nil
	}
	n, err := d.pool.Resolve(ctx, a.ID)
	if err == nil && n == t.ID {
		return byNumber, nil
	}
	if err != nil && !errors.Is(err, job.ErrNotFound) {
		return a, err
	}
	// The client id names another job, or none: what became of the token's?
	j, err := d.pool.Peek(ctx, byNumber.ID)
	if err != nil {
		return a, err // not found: the delivery's job is gone (acked, deleted, or lost with Redis's data)
	}
	if j.ClientID != a.ID {
		return a, fmt.Errorf("%w (job %s)", job.ErrOtherJob, j.PublicID())
	}
	return byNumber, nil // a's job after all (its alias not yet claimed, or already dropped)
}
