package job

import (
	"encoding/json"
	"fmt"
)

// The answers to a dependency's failure (Spec.OnDependencyFailure).
const (
	DependencyCancel = "cancel"
	DependencyRun    = "run"
)

// MaxAfter is the most jobs one job may wait for.
const MaxAfter = 100

// MaxDependents is the most jobs that may wait for one job (lua/lib_deps.lua's
// MAX_DEPENDENTS): one more is refused with ErrTooMany.
const MaxDependents = 1000

// Dependencies are what a job pushed with After waits for.
type Dependencies struct {
	After     []uint64 // every job it waits for, as pushed
	Pending   []uint64 // those that have not yet completed
	OnFailure string
	// Results are the results of those that completed, by id (JSON
	// values; null for none), when it was pushed WithResults.
	Results map[uint64]json.RawMessage
}

// CheckAfter checks a push's After and what goes with it: at most MaxAfter
// ids, each a job number or a client id; OnDependencyFailure one of the
// answers; WithResults only with After; and no unique key that would
// change a waiting job instead of pushing this one (replace, debounce):
// that job waits for what it was pushed with.
func CheckAfter(s Spec) error {
	if len(s.After) == 0 {
		if s.OnDependencyFailure != "" || s.WithResults {
			return fmt.Errorf("%w: on_dependency_failure and with_results go with after", ErrInvalid)
		}
		return nil
	}
	if len(s.After) > MaxAfter {
		return fmt.Errorf("%w: after names %d jobs, at most %d", ErrInvalid, len(s.After), MaxAfter)
	}
	for _, id := range s.After {
		if !IsNumber(id) && ValidateClientID(id) != nil {
			return fmt.Errorf("%w: after: %q is neither a job's number nor a client id", ErrInvalid, id)
		}
		if id == s.ClientID {
			return fmt.Errorf("%w: after: a job cannot wait for itself (%q)", ErrInvalid, id)
		}
	}
	switch s.OnDependencyFailure {
	case "", DependencyCancel, DependencyRun:
	default:
		return fmt.Errorf("%w: on_dependency_failure is %q: it is %q (the default) or %q", ErrInvalid, s.OnDependencyFailure, DependencyCancel, DependencyRun)
	}
	if s.Unique != nil && s.Unique.Mode != UniqueReject && s.Unique.Mode != "" {
		return fmt.Errorf("%w: after with a unique key in mode %s: the waiting job that holds the key would be changed, and it waits for what it was pushed with", ErrInvalid, s.Unique.Mode)
	}
	return nil
}
