package dispatcher

import (
	"context"

	"github.com/gmq/gmq/job"
	"github.com/gmq/gmq/pool"
)

// watchingTTR is pop that also tells the bucket timers when the jobs it
// reserved are due back (reserved).
func (d *Dispatcher) watchingTTR(pop func(context.Context, []string) (pool.Popped, error)) func(context.Context, []string) (pool.Popped, error) {
	return func(ctx context.Context, topics []string) (pool.Popped, error) {
		got, err := pop(ctx, topics)
		if err == nil {
			d.reserved(got)
		}
		return got, err
	}
}

// reserved nudges the timer of each reserved job's bucket to the job's TTR
// deadline: a timer asleep for up to [bucket] max_sleep would otherwise
// notice a TTR run out that much late, and deliver the job again late.
func (d *Dispatcher) reserved(got pool.Popped) {
	nudge := func(j *job.Job) {
		if j != nil && j.State == job.Reserved && !j.Due.IsZero() {
			d.nudge(j.Topic, j.Due, j.Now)
		}
	}
	nudge(got.Job)
	for _, j := range got.Rest {
		nudge(j)
	}
}
