package job

import "time"

// Counters are a bucket's (or, summed, the server's) job counts and totals.
type Counters struct {
	Ready, Delayed, Reserved, Buried                    int64
	Dead                                                int64 // jobs now in dead sets
	Completed, CompletedTotal                           int64 // jobs now kept completed (keep_completed); acks that kept their job
	Cancelled, CancelledTotal                           int64 // jobs now kept cancelled; jobs cancelled
	Failures, DeadTotal                                 int64 // failures reported (or TTRs run out); jobs that died
	Jobs, Reserves, Deletes, Timeouts, Releases, Buries int64
	Kicks, Touches                                      int64
	Flushed                                             int64 // removed by a topic's flush or delete
	Discarded                                           int64 // dropped to make room in a full topic (discard_old_when_full)
	Expired                                             int64 // expired before they were delivered (removed or moved by expire_to)
	// Topics made (first job, or first reference of a fanout child), deleted
	// (on purpose, or by max_queue_age) and expired by max_queue_age.
	QueueCreates, QueueDeletes, QueueExpires int64
	// FollowUps are follow-ups kept, not yet pushed: those a broker is
	// pushing, and those their topic refused for now (docs/workflows.md).
	FollowUps int64
}

// TopicStats are one topic's counts and counters.
type TopicStats struct {
	Name                             string
	Ready, Urgent, Delayed, Reserved int64
	Buried                           int64
	PausedUntil                      time.Time // zero when not paused
	Pause                            time.Duration
	Jobs, Reserves, Deletes, Pauses  int64
	Bytes                            int64         // of the bodies of its jobs, in any state
	Discarded                        int64         // dropped to make room (discard_old_when_full)
	Expired                          int64         // expired before delivery (removed, or moved by expire_to)
	Children                         []string      // its fanout children (parent+child), sorted
	Dead                             int64         // its dead jobs now
	Failures, DeadTotal              int64         // failures (fails, TTRs run out); jobs that died
	DeadRetried, DeadDropped         int64         // dead jobs retried; removed by dead_retention or max_dead
	Completed, CompletedTotal        int64         // its completed jobs kept now; acks that kept their job completed
	Cancelled, CancelledTotal        int64         // its cancelled jobs kept now; its jobs cancelled
	OldestReady                      time.Time     // created time of the next ready job; zero when none is ready
	Created                          time.Time     // when the topic came to be, its counters from zero (zero: not noted)
	Tokens                           int64         // whole tokens its rate has now (-1: no rate)
	Limited                          int64         // looks of pops that found its ready jobs held back by its rate or max_reserved
	LimitedTime                      time.Duration // what consumers' pops spent held back by its limits
	Groups                           int64         // its groups with ready jobs (0: none, or not grouped)
	BusiestGroups                    []GroupStats  // the (at most 10) groups with the most ready jobs, most first
	GroupsForgotten                  int64         // idle groups whose group_rate hold was forgotten at group_max_parked
	Settings                         TopicConfig   // the effective ones (nil: none set)
	Now                              time.Time
}

// GroupStats are one fair group's counts.
type GroupStats struct {
	Name            string
	Ready, Reserved int64
}

// RateTokens is the whole tokens the topic's rate has now, and whether it
// has a rate at all.
func (s TopicStats) RateTokens() (int64, bool) {
	if r := s.Settings["rate"]; r == "" || r == "0" || s.Tokens < 0 {
		return 0, false
	}
	return s.Tokens, true
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

// ReadyAge is how long the next ready job has waited since it was pushed
// (the queue's latency); 0 when none is ready.
func (s TopicStats) ReadyAge() time.Duration {
	if s.OldestReady.IsZero() {
		return 0
	}
	return max(s.Now.Sub(s.OldestReady), 0)
}

// UrgentBelow is the priority under which a ready job counts as urgent (beanstalkd's rule).
const UrgentBelow = 1024
