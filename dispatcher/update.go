package dispatcher

import (
	"context"
	"fmt"
	"time"

	"github.com/gmq/gmq/job"
)

// UpdateJob changes a ready or delayed job's delay, priority or body and
// returns it as it now is.
func (d *Dispatcher) UpdateJob(ctx context.Context, id string, u job.Update) (*job.Job, error) {
	if err := d.allow("update", writing); err != nil {
		return nil, err
	}
	switch {
	case u.Empty():
		return nil, fmt.Errorf("%w: nothing to change: give a delay, a priority or a body", job.ErrInvalid)
	case u.Body != nil && len(*u.Body) > d.opts.MaxBody:
		return nil, fmt.Errorf("%w: %d bytes, the limit is %d", job.ErrTooBig, len(*u.Body), d.opts.MaxBody)
	case u.Delay != nil && (*u.Delay < 0 || *u.Delay > job.MaxSeconds*time.Second):
		return nil, fmt.Errorf("%w: delay must be from 0 to %d seconds", job.ErrInvalid, int64(job.MaxSeconds))
	}
	j, err := d.pool.UpdateJob(ctx, id, u)
	if err != nil {
		return nil, err
	}
	d.placed(j)
	return j, nil
}
