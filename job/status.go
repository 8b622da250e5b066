package job

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Status is the server status every broker sharing a Redis obeys (kestrel's):
// what it accepts, so that an operator can drain queues before maintenance.
type Status int

// The statuses, from the most open to the most closed.
const (
	// Up accepts everything.
	Up Status = iota
	// WriteAvoid is advisory: reported, blocking nothing (kestrel's hint to
	// clients to write elsewhere).
	WriteAvoid
	// ReadOnly refuses what adds or destroys jobs (pushes, deletes, flushes)
	// while pops, acks, releases and touches go on, so queues drain.
	ReadOnly
	// Quiescent refuses every queue operation but finishing reservations
	// taken before it (ack, release, bury, touch).
	Quiescent
)

var statusNames = [...]string{"up", "writeavoid", "readonly", "quiescent"}

func (s Status) String() string {
	if s < 0 || int(s) >= len(statusNames) {
		return "status(" + strconv.Itoa(int(s)) + ")"
	}
	return statusNames[s]
}

// ParseStatus reads a status name, case-blind ("ReadOnly", "READONLY").
func ParseStatus(name string) (Status, error) {
	for i, n := range statusNames {
		if strings.EqualFold(name, n) {
			return Status(i), nil
		}
	}
	return Up, fmt.Errorf("%w: unknown status %q: want up, writeavoid, readonly or quiescent", ErrInvalid, name)
}

// ErrRefused: the server status refuses the operation now; retry later or
// elsewhere. Test for it with errors.Is; the message names the status.
var ErrRefused = errors.New("refused by the server status")

// StatusError says which status refused an operation.
type StatusError struct {
	Status Status
	Op     string
}

func (e *StatusError) Error() string {
	why := "pushes, deletes and flushes are refused while queues drain"
	if e.Status == Quiescent {
		why = "only reservations taken before it may be finished (ack, release, bury, touch)"
	}
	return fmt.Sprintf("%s: the server status is %s: %s", e.Op, e.Status, why)
}

// Unwrap lets errors.Is(err, ErrRefused) match.
func (e *StatusError) Unwrap() error { return ErrRefused }

// A StatusLayer is one source of a broker's status (the fleet's, the
// broker's own, its signals'): the status obeyed now and, when a stricter
// one was set with a grace period (kestrel's statusChangeGracePeriod), that
// one and when it is enforced. A stricter status is announced at once, so
// that clients and load balancers move away, and refuses only from At.
type StatusLayer struct {
	Now  Status
	Next Status    // Now when no change is pending
	At   time.Time // when Next is enforced (zero: none pending)
}

// Enforced is the status the layer makes a broker obey at t.
func (l StatusLayer) Enforced(t time.Time) Status {
	if l.Next > l.Now && !l.At.IsZero() && !t.Before(l.At) {
		return l.Next
	}
	return l.Now
}

// Announced is the status the layer reports: a pending stricter one already.
func (l StatusLayer) Announced() Status { return max(l.Now, l.Next) }

// Pending says a stricter status waits for its grace to end at t.
func (l StatusLayer) Pending(t time.Time) bool { return l.Enforced(t) < l.Announced() }

// ErrStatusPending: a stricter status was asked while another stricter one
// still waits out its grace period (kestrel refuses it too); a looser one
// may always be set.
var ErrStatusPending = errors.New("a stricter status is pending")
