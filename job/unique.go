package job

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// UniqueMode is what a push does when its unique key is held.
type UniqueMode string

const (
	// UniqueReject refuses the push (ErrDuplicate, a UniqueError naming the
	// job that holds the key).
	UniqueReject UniqueMode = "reject"
	// UniqueReplace gives the waiting (ready or delayed) job that holds the
	// key the push's body, delay and priority.
	UniqueReplace UniqueMode = "replace"
	// UniqueDebounce moves the waiting job's due time to now + the push's delay.
	UniqueDebounce UniqueMode = "debounce"
)

// Bounds of a unique key and its window.
const (
	MaxUniqueKey = 256                 // bytes
	MaxUniqueFor = 30 * 24 * time.Hour // a window longer than a month is a job's id, not a debounce
)

// Unique makes a push one of its kind: while Key is held (For after the
// push that took it; a replace or debounce holds it For again), another
// push with the same key in the same topic is refused, or changes the job
// that holds it, as Mode says. A job that is not waiting (reserved, or
// done) is never changed: a replace or debounce then stores a fresh job,
// which takes the key.
type Unique struct {
	Key  string
	For  time.Duration // whole milliseconds
	Mode UniqueMode
}

// FollowUpKeyPrefix starts the unique key each follow-up is pushed with,
// which makes it once (docs/workflows.md): a producer's key may not.
const FollowUpKeyPrefix = "gmq follow-up "

// Check validates u.
func (u Unique) Check() error {
	if u.Key == "" || len(u.Key) > MaxUniqueKey || !utf8.ValidString(u.Key) {
		return fmt.Errorf("%w: unique key: want 1 to %d bytes of UTF-8", ErrInvalid, MaxUniqueKey)
	}
	if strings.HasPrefix(u.Key, FollowUpKeyPrefix) {
		return fmt.Errorf("%w: unique key %q: keys starting %q are gmq's own (follow-ups')", ErrInvalid, u.Key, FollowUpKeyPrefix)
	}
	if u.For < time.Millisecond || u.For > MaxUniqueFor {
		return fmt.Errorf("%w: unique for: want seconds from 0.001 to %d", ErrInvalid, int64(MaxUniqueFor/time.Second))
	}
	switch u.Mode {
	case UniqueReject, UniqueReplace, UniqueDebounce:
		return nil
	}
	return fmt.Errorf("%w: unique mode %q: want reject, replace or debounce", ErrInvalid, u.Mode)
}

// UniqueError is a push refused because its unique key is held by another
// job (mode reject). The job named may be done already: the key holds for
// its window whatever becomes of the job.
type UniqueError struct {
	Topic, Key string
	ID         uint64 // the job that holds the key
	ClientID   string // its client id, if it had one
}

func (e *UniqueError) Error() string {
	return fmt.Sprintf("unique key %q of topic %q is held by job %s", e.Key, e.Topic, PublicID(e.ClientID, e.ID))
}

// Unwrap lets errors.Is(err, ErrDuplicate) match: a 409 in HTTP.
func (e *UniqueError) Unwrap() error { return ErrDuplicate }

// Pushed is what a push did: the job's id, and for a unique push that met a
// waiting job with its key, what it did to that job ("replaced" or
// "debounced"; ID is then that job's), or, from Standing, that the job
// holding its key stands for it (UniqueHeld).
type Pushed struct {
	ID       uint64
	ClientID string // the job's client id ("" for none)
	Unique   string
}

// UniqueHeld is Pushed.Unique of a push refused because another job holds
// its unique key, which Standing answers in the refusal's place.
const UniqueHeld = "held"

// Standing is a push's outcome (Dispatcher.Push's answer) for a protocol
// where a held unique key counts as success, having no word for the
// refusal (beanstalkd's put, kestrel's set and put): the job that stands
// for the push, the one it made or the one that holds its key (Unique
// UniqueHeld). Any other failure is returned as it is. HTTP, JSON-RPC and
// the clients answer the refusal itself (409, ErrDuplicate).
func Standing(p Pushed, err error) (Pushed, error) {
	var held *UniqueError
	if errors.As(err, &held) {
		return Pushed{ID: held.ID, ClientID: held.ClientID, Unique: UniqueHeld}, nil
	}
	return p, err
}
