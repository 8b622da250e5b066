package job

import (
	"fmt"
	"strconv"
	"time"
)

// The backoffs a retry policy may have: the wait before the next attempt
// after the n-th failure is Base (fixed), Base×n (linear) or Base×2^(n−1)
// (exponential), at most Max; with Jitter, a uniform share of it between half
// and all.
var Backoffs = []string{"fixed", "linear", "exponential"}

// DefaultMaxAttempts is max_attempts when no layer of a topic's settings
// sets it: a job that keeps failing (fails, TTRs that run out) is dead after
// this many, as asynq's and Sidekiq's are after 25. 0, set explicitly, keeps
// retrying for ever. The scripts hold it too (lib_failures.lua).
const DefaultMaxAttempts = 25

// RetryPolicy is a job's own retry policy; a field left at its zero (or
// nil) value is taken from the job's topic's settings (max_attempts,
// backoff, backoff_base, backoff_max, backoff_jitter).
type RetryPolicy struct {
	MaxAttempts *int // 0: retry for ever
	Backoff     string
	Base, Max   time.Duration
	Jitter      *bool
}

// Check validates a policy.
func (p RetryPolicy) Check() error {
	if p.MaxAttempts != nil && *p.MaxAttempts < 0 {
		return fmt.Errorf("%w: retry max_attempts must be 0 (for ever) or more", ErrInvalid)
	}
	if p.Backoff != "" && !validBackoff(p.Backoff) {
		return fmt.Errorf("%w: retry backoff %q: want one of %v", ErrInvalid, p.Backoff, Backoffs)
	}
	if p.Base < 0 || p.Max < 0 {
		return fmt.Errorf("%w: retry base and max must not be negative", ErrInvalid)
	}
	return nil
}

// Encode is the policy as the store keeps it in a job's record: five words,
// max attempts, backoff, base ms, max ms, jitter (1 or 0), each "-" when the
// topic's applies; "" for a nil policy.
func (p *RetryPolicy) Encode() string {
	if p == nil {
		return ""
	}
	word := func(set bool, v string) string {
		if !set {
			return "-"
		}
		return v
	}
	jitter := "-"
	if p.Jitter != nil {
		jitter = "0"
		if *p.Jitter {
			jitter = "1"
		}
	}
	max := "-"
	if p.MaxAttempts != nil {
		max = strconv.Itoa(*p.MaxAttempts)
	}
	return max + " " + word(p.Backoff != "", p.Backoff) + " " +
		word(p.Base > 0, strconv.FormatInt(p.Base.Milliseconds(), 10)) + " " +
		word(p.Max > 0, strconv.FormatInt(p.Max.Milliseconds(), 10)) + " " + jitter
}

func validBackoff(b string) bool {
	for _, k := range Backoffs {
		if b == k {
			return true
		}
	}
	return false
}

func backoff(v string) (string, error) {
	if !validBackoff(v) {
		return "", fmt.Errorf("want one of %v", Backoffs)
	}
	return v, nil
}
