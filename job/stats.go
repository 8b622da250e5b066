package job

import "time"

// Counters are a bucket's (or, summed, the server's) job counts and totals.
type Counters struct {
	Ready, Delayed, Reserved, Buried                    int64
	Jobs, Reserves, Deletes, Timeouts, Releases, Buries int64
	Kicks, Touches                                      int64
	Flushed                                             int64 // removed by a topic's flush or delete
	Discarded                                           int64 // dropped to make room in a full topic (discard_old_when_full)
}

// TopicStats are one topic's counts and counters.
type TopicStats struct {
	Name                             string
	Ready, Urgent, Delayed, Reserved int64
	Buried                           int64
	PausedUntil                      time.Time // zero when not paused
	Pause                            time.Duration
	Jobs, Reserves, Deletes, Pauses  int64
	Bytes                            int64 // of the bodies of its jobs, in any state
	Now                              time.Time
}

// Paused reports whether pops skip the topic now.
func (s TopicStats) Paused() bool { return s.PausedUntil.After(s.Now) }

// PauseLeft is how long the topic stays paused.
func (s TopicStats) PauseLeft() time.Duration {
	if !s.Paused() {
		return 0
	}
	return s.PausedUntil.Sub(s.Now)
}

// UrgentBelow is the priority under which a ready job counts as urgent (beanstalkd's rule).
const UrgentBelow = 1024
