// Package budget bounds the memory that request bodies take while they
// arrive, on every port at once ([server] body_memory). A body is read in
// steps, each reserved before its bytes are read; while none is free, the
// rest of the body waits in the kernel's socket buffer, not in the broker. So
// a flood of slow or unfinished requests holds at most the budget, not the
// sum of their sizes, whichever front ends they come through.
package budget

import (
	"context"
	"fmt"
	"time"

	"github.com/gmq/gmq/job"
)

// Unit is one step of a reservation.
const Unit = 32 << 10

// Wait is how long a request waits for budget before it is refused as busy
// (HTTP answers 503; the TCP ports their own "try again later").
const Wait = 2 * time.Second

// Budget is a number of free units, shared by every reader. The zero of a
// *Budget (nil) bounds nothing: a front end built without one (in tests).
type Budget struct{ units chan struct{} }

// New returns a budget of bytes (at least one unit).
func New(bytes int) *Budget {
	return &Budget{units: make(chan struct{}, max(bytes/Unit, 1))}
}

// take reserves one unit, waiting up to Wait for it, and never past until
// (when set).
func (b *Budget) take(ctx context.Context, until time.Time) error {
	select {
	case b.units <- struct{}{}:
		return nil
	default:
	}
	wait := Wait
	if !until.IsZero() {
		wait = min(wait, time.Until(until))
	}
	t := time.NewTimer(max(wait, 0))
	defer t.Stop()
	select {
	case b.units <- struct{}{}:
		return nil
	case <-t.C:
		return fmt.Errorf("%w: too many request bodies are being read at once ([server] body_memory)", job.ErrBusy)
	case <-ctx.Done():
		return fmt.Errorf("waiting for body memory: %w", ctx.Err())
	}
}

// Give returns n units.
func (b *Budget) Give(n int) {
	if b == nil {
		return
	}
	for range n {
		<-b.units
	}
}

// Hold is what one request holds of a budget: it grows as the request's
// bytes arrive and is given back whole (Release, or Take and Give) once the
// request is done with them. One goroutine uses a Hold at a time.
type Hold struct {
	Budget *Budget
	Ctx    context.Context // ends a wait for budget (the connection or request went away)
	// Until, when set, is the latest a wait for budget may last: the
	// request's read deadline. Without it a body that waits for each of its
	// units in turn could wait Wait for every one, and a request begun
	// would stay open many times its read_timeout.
	Until time.Time
	units int
}

// Cover makes the hold cover n bytes, reserving units as needed. It fails
// with job.ErrBusy when budget stays short for Wait, or until Until.
func (h *Hold) Cover(n int) error {
	if h.Budget == nil {
		return nil
	}
	for h.units*Unit < n {
		if err := h.Budget.take(h.Ctx, h.Until); err != nil {
			return err
		}
		h.units++
	}
	return nil
}

// Take detaches the units held, for the caller to Give later: a request
// framed by one goroutine and finished by another.
func (h *Hold) Take() int {
	n := h.units
	h.units = 0
	return n
}

// Release gives back everything held.
func (h *Hold) Release() { h.Budget.Give(h.Take()) }
