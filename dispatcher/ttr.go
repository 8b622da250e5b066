package dispatcher

import (
	"github.com/gmq/gmq/job"
	"github.com/gmq/gmq/pool"
)

// reserved nudges the timer of each reserved job's bucket to the job's TTR
// deadline: a timer asleep for up to [bucket] max_sleep would otherwise
// notice a TTR run out that much late, and deliver the job again late.
// Every pop that reserves returns through wait or ackAndPop, which call it.
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
