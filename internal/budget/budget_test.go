package budget

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gmq/gmq/job"
)

// A wait for body memory ends at the request's read deadline (Until) when
// that comes before Wait: a body that waited Wait for each of its units in
// turn kept a request begun open many times read_timeout (79 of 2,000
// unfinished JSON-RPC pushes were still open a minute past it on a loaded
// machine).
func TestHoldWaitsNoLongerThanUntil(t *testing.T) {
	for _, tt := range []struct {
		name  string
		free  bool      // a unit is free
		until time.Time // the hold's Until
		want  error
	}{
		{"a free unit, no deadline", true, time.Time{}, nil},
		{"a free unit, its deadline passed", true, time.Now().Add(-time.Second), nil}, // nothing to wait for
		{"no unit, the deadline passed", false, time.Now().Add(-time.Second), job.ErrBusy},
		{"no unit, the deadline soon", false, time.Now().Add(20 * time.Millisecond), job.ErrBusy},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := New(Unit)
			if !tt.free {
				held := Hold{Budget: b, Ctx: context.Background()}
				if err := held.Cover(1); err != nil {
					t.Fatal(err)
				}
				defer held.Release()
			}
			h := Hold{Budget: b, Ctx: context.Background(), Until: tt.until}
			defer h.Release()
			start := time.Now()
			err := h.Cover(1)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("Cover: %v, want %v", err, tt.want)
			}
			if waited := time.Since(start); waited >= Wait {
				t.Errorf("waited %v, the whole of Wait: Until was not heeded", waited)
			}
		})
	}
}
