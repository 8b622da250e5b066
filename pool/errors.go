package pool

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/rueidis"
)

// Expected outcomes of store operations; test them with errors.Is.
var (
	// ErrNotFound: no job has that id (or the topic is unknown).
	ErrNotFound = errors.New("not found")
	// ErrDuplicate: a live job already has the client-supplied id.
	ErrDuplicate = errors.New("a live job already has this id")
	// ErrStale: the call names an older delivery of a job that was delivered again since.
	ErrStale = errors.New("stale delivery: the job was delivered again since")
	// ErrNotReserved: the operation needs a reserved job (or, for kick, a buried or delayed one).
	ErrNotReserved = errors.New("job is not in a state that allows this")
	// ErrInvalid: an argument breaks a rule (topic name, id, limits).
	ErrInvalid = errors.New("invalid")
	// ErrUnavailable: Redis could not be reached or is not serving yet; retry later.
	ErrUnavailable = errors.New("redis unavailable")
)

// StateError says which state made an operation impossible.
type StateError struct {
	Op    string
	State State
}

func (e *StateError) Error() string { return fmt.Sprintf("%s: job is %s", e.Op, e.State) }

// Unwrap lets errors.Is(err, ErrNotReserved) match.
func (e *StateError) Unwrap() error { return ErrNotReserved }

// StaleError carries the current delivery number of the job.
type StaleError struct {
	Attempt, Current int
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("stale delivery: attempt %d, the job is on attempt %d", e.Attempt, e.Current)
}

// Unwrap lets errors.Is(err, ErrStale) match.
func (e *StaleError) Unwrap() error { return ErrStale }

// unavailableReplies are Redis error replies that mean "not serving now".
var unavailableReplies = []string{"LOADING", "BUSY", "MASTERDOWN", "TRYAGAIN", "CLUSTERDOWN", "READONLY"}

// wrapRedis gives a Redis call's error its context and classifies it: network
// failures and not-serving replies become ErrUnavailable.
func wrapRedis(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w", op, err)
	}
	if re, ok := rueidis.IsRedisErr(err); ok {
		msg := re.Error()
		for _, prefix := range unavailableReplies {
			if strings.HasPrefix(msg, prefix) {
				return fmt.Errorf("%s: %w: %w", op, ErrUnavailable, err)
			}
		}
		return fmt.Errorf("%s: redis: %w", op, err)
	}
	return fmt.Errorf("%s: %w: %w", op, ErrUnavailable, err)
}
