package job

import (
	"errors"
	"fmt"
)

// Expected outcomes of the broker's operations, which every front end maps to
// its protocol's answers; test them with errors.Is.
var (
	// ErrNotFound: no job has that id (or the topic is unknown).
	ErrNotFound = errors.New("not found")
	// ErrDuplicate: a job the store keeps already has the client-supplied
	// id: a live one, or a completed one kept (keep_completed, or
	// keep_results for an ack with a result), which a producer reusing ids
	// would not take for live.
	ErrDuplicate = errors.New("a job already has this id (live, or completed and kept)")
	// ErrStale: the call names an older delivery of a job that was delivered again since.
	ErrStale = errors.New("stale delivery: the job was delivered again since")
	// ErrNotReserved: the operation needs a reserved job (or, for kick, a buried or delayed one).
	ErrNotReserved = errors.New("job is not in a state that allows this")
	// ErrInvalid: an argument breaks a rule (topic name, id, limits).
	ErrInvalid = errors.New("invalid")
	// ErrUnavailable: Redis could not be reached, did not answer in time or is
	// not serving yet; retry later.
	ErrUnavailable = errors.New("redis unavailable")
	// ErrOutOfMemory: Redis is at its maxmemory and refuses writes that would
	// grow it; retry later (pops and acks still work: they free memory).
	// A client is told OutOfMemoryReason, not Redis's raw reply.
	ErrOutOfMemory = errors.New("redis is out of memory")
	// ErrBusy: the outcome could not be settled now (e.g. a client id kept
	// changing hands between pushes racing for it); retry.
	ErrBusy = errors.New("busy")
	// ErrTooBig: a job body is over the configured limit.
	ErrTooBig = errors.New("job body too big")
	// ErrFull: the topic holds as many jobs as its max_items allows; retry
	// when consumers have taken some.
	ErrFull = errors.New("topic is full")
	// ErrTooMany: the call would put a count past a bound that consumers
	// taking jobs do not lower (a job's dependents, a batch's jobs), so a
	// retry is refused again: an ErrTooBig (HTTP 413), not an ErrFull (507),
	// which clients retry.
	ErrTooMany error = tooMany{}
	// ErrConflict: the topic's state does not allow the operation (a
	// grouped push to a topic with too many ungrouped ready jobs).
	ErrConflict = errors.New("conflict")
	// ErrOtherJob: a call names a job by one id and its delivery by a token
	// of another job (a client id whose job the token's is not).
	ErrOtherJob = errors.New("the token is a delivery of another job")
	// ErrCancelled: the job was cancelled while its consumer held it; the
	// call that learnt it ended it cancelled. The consumer should stop.
	ErrCancelled = errors.New("the job was cancelled")
	// ErrTooManyWaiting: as many consumers as allowed already wait in a long poll.
	ErrTooManyWaiting = errors.New("too many waiting consumers")
)

// OutOfMemoryReason is what a client is told of an ErrOutOfMemory, on every
// front end: Redis's raw reply names script hashes and lines (the log keeps
// it).
const OutOfMemoryReason = "redis is out of memory (its maxmemory is reached): retry later; pops and acks still work"

// tooMany is ErrTooMany: its own words, and an ErrTooBig wherever one is
// answered or refused for good.
type tooMany struct{}

func (tooMany) Error() string { return "too many" }

// Is lets errors.Is(err, ErrTooBig) match.
func (tooMany) Is(target error) bool { return target == ErrTooBig }

// ResultTooBigError is an ack whose result is over its topic's max_result:
// the job stays as it was. It is an ErrTooBig.
type ResultTooBigError struct{ Max int64 }

func (e *ResultTooBigError) Error() string {
	return fmt.Sprintf("result too big: its topic's max_result is %d bytes", e.Max)
}

// Is lets errors.Is(err, ErrTooBig) match.
func (e *ResultTooBigError) Is(target error) bool { return target == ErrTooBig }

// StateError says which state made an operation impossible.
type StateError struct {
	Op    string
	State State
}

func (e *StateError) Error() string { return fmt.Sprintf("%s: job is %s", e.Op, e.State) }

// Unwrap lets errors.Is(err, ErrNotReserved) match.
func (e *StateError) Unwrap() error { return ErrNotReserved }

// StaleError carries the current delivery number of the job, and its state
// (Gone when the store did not say).
type StaleError struct {
	Attempt, Current int
	State            State
}

// Error says which delivery the job is on; of a job never delivered
// (Current 0), that it never was and what it still is: "the job is on
// attempt 0" read as if a delivery had been lost (issue 49).
func (e *StaleError) Error() string {
	if e.Current > 0 {
		return fmt.Sprintf("stale delivery: attempt %d, the job is on attempt %d", e.Attempt, e.Current)
	}
	was := "the job was never delivered"
	switch e.State {
	case Ready, Delayed, Waiting:
		was = "the job is still " + e.State.String() + " and was never delivered"
	case Gone:
	default:
		was = "the job is " + e.State.String() + " and was never delivered"
	}
	return fmt.Sprintf("%s (no attempt %d to act on)", was, e.Attempt)
}

// Unwrap lets errors.Is(err, ErrStale) match.
func (e *StaleError) Unwrap() error { return ErrStale }

// AckedError is the failure of what followed an ack that went through (the
// pop of an ack-and-pop): the job is acked, so a client must not retry the ack
// (it would get a 404), only the pop.
type AckedError struct{ Err error }

func (e *AckedError) Error() string { return "acked, then: " + e.Err.Error() }

// Unwrap lets the cause's status apply (errors.Is(err, ErrUnavailable)).
func (e *AckedError) Unwrap() error { return e.Err }

// Outcome words the expected outcomes of an operation on one job without the
// store's verbs and numbers, for a front end to put after its client's own
// verb and id: "stale delivery: attempt 1, the job is on attempt 2", "the
// job is ready", "not found" (an ack is a delete in the store, and a client
// id a number there: "delete job 40: ..." would answer an ack of
// "order-42"). ok is false for any other error. An ack that went through
// before what followed it failed is not an outcome of the job: its own
// message says so.
func Outcome(err error) (msg string, ok bool) {
	var acked *AckedError
	var stale *StaleError
	var state *StateError
	switch {
	case errors.As(err, &acked):
		return "", false
	case errors.As(err, &stale):
		return stale.Error(), true
	case errors.As(err, &state):
		return "the job is " + state.State.String(), true
	case errors.Is(err, ErrNotFound):
		return ErrNotFound.Error(), true
	case errors.Is(err, ErrCancelled): // in the job's terms, not the store's number
		return ErrCancelled.Error() + ": stop its work", true
	case errors.Is(err, ErrOtherJob):
		return err.Error(), true
	case errors.Is(err, ErrFull), errors.Is(err, ErrTooBig): // a new body refused (an update)
		return err.Error(), true
	}
	return "", false
}
