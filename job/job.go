// Package job is the broker's vocabulary, shared by the store, the
// dispatcher and every front end: the Job as it is stored and shown, what a
// producer supplies (Spec), the states, the rules for topic names and client
// ids, the counts the stats report, and the errors every front end maps to
// its protocol's answers. It imports nothing of gmq's, so that a front end
// can speak of jobs without reaching into the Redis store.
package job

import (
	"strconv"
	"time"
)

// State is where a job is in its lifecycle.
type State int

// The job states. Gone is the state of a job a pop removed (TTR 0).
const (
	Gone State = iota
	Delayed
	Ready
	Reserved
	Buried
	// Dead: failed past its retry policy's max_attempts; kept in its topic's
	// dead set (beanstalkd's protocol shows it as buried).
	Dead
	// Completed: acked on a topic that keeps completed jobs (keep_completed),
	// with its result; kept in its topic's completed set until its time is
	// up. beanstalkd's and memcache's protocols see it as gone.
	Completed
	// Cancelled: cancelled before it ended (POST /api/v1/jobs/{id}/cancel),
	// kept like a completed job. beanstalkd's and memcache's protocols see
	// it as gone.
	Cancelled
	// Waiting: pushed with After, it waits for those jobs to complete
	// before it is ready (or delayed by its own delay: docs/workflows.md,
	// Dependencies).
	Waiting
)

var stateNames = [...]string{"gone", "delayed", "ready", "reserved", "buried", "dead", "completed", "cancelled", "waiting"}

// Stored are the states a stored job can be in (all but Gone).
var Stored = []State{Delayed, Ready, Reserved, Buried, Dead, Completed, Cancelled, Waiting}

// IsStored says s is one of Stored.
func (s State) IsStored() bool { return s >= Delayed && s <= Waiting }

// Ended says a job in state s has ended: it is kept only to be seen.
func (s State) Ended() bool { return s == Dead || s == Completed || s == Cancelled }

// ParseState reads a stored state's name ("ready", "dead"...).
func ParseState(name string) (State, bool) {
	for _, s := range Stored {
		if s.String() == name {
			return s, true
		}
	}
	return Gone, false
}

func (s State) String() string {
	if s < 0 || int(s) >= len(stateNames) {
		return "state(" + strconv.Itoa(int(s)) + ")"
	}
	return stateNames[s]
}

// DefaultPriority is beanstalkd's conventional middle priority; lower runs first.
const DefaultPriority = 1024

// KeepPriority, as the priority of a release or a bury, leaves the job's
// priority as it is.
const KeepPriority = -1

// Spec is what a producer supplies.
type Spec struct {
	ClientID string // optional; "" lets gmq number the job
	Topic    string
	Body     string
	// BodyJSON says Body is the compact text of a JSON object or array
	// (json.Compact), pushed as JSON: the JSON front ends give it back as
	// JSON, the others as these bytes. False: Body is a string, whatever it
	// holds.
	BodyJSON bool
	Priority uint32
	Delay    time.Duration // rounded up to whole milliseconds
	TTR      time.Duration // 0: removed when popped; rounded up to whole milliseconds
	// Expires, when not zero, is when the job expires: it is then never
	// delivered (removed, or moved to its topic's expire_to). The topic's
	// max_age caps it.
	Expires time.Time
	// Retry, when not nil, is the job's own retry policy over its topic's.
	Retry *RetryPolicy
	// TraceParent is the producer's W3C trace context (traceparent), kept
	// with the job and handed to its consumers, so a trace crosses the queue.
	TraceParent string
	// Unique, when not nil, makes the push one of its kind (Unique).
	Unique *Unique
	// Group, when not "", is the job's fair group: a grouped topic's pops
	// take groups in turn (docs/topics.md, Fair groups).
	Group string
	// KeepCompleted, when not nil, is how long the job is kept completed
	// after its ack, over its topic's keep_completed (0: deleted at its ack).
	KeepCompleted *time.Duration
	// Timeout, when not zero, is how long a worker's handler may run on the
	// job: the clients' worker loops stop a handler past it (or past their
	// own timeout, whichever is shorter) and fail the job.
	Timeout time.Duration
	// Then are follow-ups pushed when the job completes (an ack, by any
	// front end), OnDead when it dies: each pushed exactly once
	// (docs/workflows.md). A follow-up may have its own.
	Then, OnDead []Spec
	// WithResult, on a follow-up of a completion (an ack's push, a then),
	// makes its body {"body": its body, "result": the finished job's
	// result, null for none}.
	WithResult bool
	// After are the jobs (ids or client ids) this one waits for: it is
	// Waiting until each has completed, then ready, or delayed by its
	// Delay (docs/workflows.md, Dependencies). At most MaxAfter.
	After []string
	// OnDependencyFailure is what it does when one of them ends otherwise
	// (dead, cancelled, deleted, expired, discarded): DependencyCancel
	// (the default, "" too) or DependencyRun.
	OnDependencyFailure string
	// WithResults keeps its dependencies' results with it, for its view
	// (Job.Dependencies.Results).
	WithResults bool
	// Batch is the batch it is pushed into (0: none), BatchResults whether
	// that batch keeps its members' results: set by the pool's batch calls
	// (CreateBatch, AddToBatch), never by a plain push.
	Batch        uint64
	BatchResults bool
}

// Update is what a change of a waiting (ready or delayed) job sets; a nil
// field is left as it is.
type Update struct {
	Delay    *time.Duration // due this long from now (0: ready at once); rounded up to whole milliseconds
	Priority *uint32
	Body     *string
	BodyJSON bool // with Body: it is a JSON object or array's compact text (Spec.BodyJSON)
}

// Empty says u changes nothing.
func (u Update) Empty() bool { return u.Delay == nil && u.Priority == nil && u.Body == nil }

// Job is a stored job as read at one instant (Now, Redis's clock).
type Job struct {
	ID       uint64
	ClientID string
	Topic    string
	Body     string
	BodyJSON bool // Body is a JSON object or array's compact text (Spec.BodyJSON)
	Priority uint32
	Delay    time.Duration
	TTR      time.Duration
	State    State
	Created  time.Time
	Due      time.Time // delayed: when it becomes ready; reserved: when its TTR runs out
	Expires  time.Time // zero: never
	// Failures is how many times consumers failed it (a fail, or its TTR ran
	// out) since it was pushed or last retried; LastError the last one's
	// error; Errors the errors of its last ErrorsKept failures, oldest first
	// (nil: it never failed); DeadAt when it died (zero: alive).
	Failures    int
	LastError   string
	Errors      []FailureError
	DeadAt      time.Time
	TraceParent string // the producer's W3C traceparent, "" for none
	Group       string // its fair group, "" for none
	// EndedAt is when its ack completed it, or it was cancelled (zero:
	// neither); Result what the ack gave (a JSON value's compact text, ""
	// none).
	EndedAt time.Time
	Result  string
	// KeepCompleted is the job's own keep_completed (-1: its topic's).
	KeepCompleted time.Duration
	// MaxAttempts is how many failures it may have before it is dead (0:
	// retried for ever), where known: its own retry policy's, which every
	// read of it knows, or its topic's max_attempts (else
	// DefaultMaxAttempts), which only a look at the job reads
	// (Dispatcher.Inspect); nil: its topic's, not read.
	MaxAttempts *int
	// Timeout is how long a worker's handler may run on it (0: the
	// worker's own).
	Timeout time.Duration
	// Cancelling: a cancel was asked while the job was reserved; its
	// consumer's next touch, progress or ack ends it cancelled.
	Cancelling bool
	// Progress is its consumer's last progress (a JSON value's compact
	// text, "" none); Log its consumer's log lines, oldest first.
	Progress string
	Log      []LogLine
	// History is its transitions, oldest first, where its topic keeps them
	// (job_history).
	History []HistoryEntry
	// Then and OnDead are the ids its follow-ups will be pushed under when
	// it completes, when it dies (none once they are pushed).
	Then, OnDead []uint64
	// Dependencies: pushed with After, what it waits for (nil: none).
	Dependencies *Dependencies
	// Batch is the batch it belongs to (0: none).
	Batch uint64
	Now   time.Time

	Reserves, Timeouts, Releases, Buries, Kicks int
}

// HistoryEntry is one transition of a job: when, what ("pushed",
// "reserved", "completed"...), at which attempt, and what it adds (the
// broker that reserved it, a failure's error, a release's delay ms).
type HistoryEntry struct {
	At      time.Time
	Event   string
	Attempt int
	Detail  string
}

// FailureError is one failure of a job: the attempt (delivery) that
// failed, when, and its error, cut to ErrorBytes (NoReason for a fail that
// gave none, "ttr expired" for a TTR that ran out).
type FailureError struct {
	Attempt int
	At      time.Time
	Error   string
}

// What a failed job keeps of its failures' errors: the last ErrorsKept,
// each cut to ErrorBytes (at a character's start), so a job that failed
// often carries at most about 10 KiB of them in its record, rewritten at
// each of its transitions. A job that never failed keeps none.
const (
	ErrorsKept = 10
	ErrorBytes = 1024
)

// NoReason is the error kept for a fail that gave none.
const NoReason = "(no reason given)"

// LogLine is a line of a job's log, as its consumer reported it.
type LogLine struct {
	At   time.Time
	Line string
}

// PublicID is the id producers and consumers see: the client's own id when it
// gave one, else gmq's number.
func (j *Job) PublicID() string { return PublicID(j.ClientID, j.ID) }

// PublicID is the id a job is shown by: its client id if it has one, else its number.
func PublicID(clientID string, id uint64) string {
	if clientID != "" {
		return clientID
	}
	return strconv.FormatUint(id, 10)
}

// Attempt numbers the job's deliveries; an ack naming an older one is refused.
func (j *Job) Attempt() int { return j.Reserves }

// TimeLeft is how long until a delayed job is due or a reservation runs out.
func (j *Job) TimeLeft() time.Duration {
	if j.State != Delayed && j.State != Reserved {
		return 0
	}
	return max(j.Due.Sub(j.Now), 0)
}

// Age is how long ago the job was created.
func (j *Job) Age() time.Duration { return j.Now.Sub(j.Created) }

// ExpiresIn is when a job that expires in d expires: d from now, or, for
// d of 0 or less ("expired at once"), a second ago, so that it is past on
// Redis's clock too, which may be a millisecond behind this machine's
// (a job expiring "now" would be popped in that millisecond).
func ExpiresIn(d time.Duration) time.Time {
	if d <= 0 {
		d = -time.Second
	}
	return time.Now().Add(d)
}

// Again is the push of a copy of j, as a read of it tells its push: its id,
// topic, body, priority, expiry, trace, group, timeout and own
// keep_completed (kestrel text's item that must be pushed again). A field
// of both Job and Spec is added here too.
func (j *Job) Again() Spec {
	s := Spec{ClientID: j.ClientID, Topic: j.Topic, Body: j.Body, BodyJSON: j.BodyJSON, Priority: j.Priority,
		Expires: j.Expires, TraceParent: j.TraceParent, Group: j.Group, Timeout: j.Timeout}
	if j.KeepCompleted >= 0 {
		keep := j.KeepCompleted
		s.KeepCompleted = &keep
	}
	return s
}
