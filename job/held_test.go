package job

import (
	"errors"
	"fmt"
	"testing"
)

func TestNotHeldAndSuperseded(t *testing.T) {
	for _, tt := range []struct {
		err                 error
		notHeld, superseded bool
	}{
		{nil, false, false},
		{errors.New("boom"), false, false},
		{ErrUnavailable, false, false},
		{fmt.Errorf("ack job 3: %w", &StaleError{Attempt: 1, Current: 2}), true, true},
		{fmt.Errorf("ack job 3: %w", ErrNotFound), true, true},
		{fmt.Errorf("job 3: %w", &StateError{Op: "give back", State: Ready}), true, false},
		{fmt.Errorf("touch job 3: %w", ErrCancelled), true, false},
	} {
		if got := NotHeld(tt.err); got != tt.notHeld {
			t.Errorf("NotHeld(%v) = %v, want %v", tt.err, got, tt.notHeld)
		}
		if got := Superseded(tt.err); got != tt.superseded {
			t.Errorf("Superseded(%v) = %v, want %v", tt.err, got, tt.superseded)
		}
	}
}

func TestAcked(t *testing.T) {
	if !Acked(fmt.Errorf("pop: %w", &AckedError{Err: ErrUnavailable})) {
		t.Error("an AckedError, wrapped, is acked")
	}
	if Acked(ErrUnavailable) || Acked(nil) {
		t.Error("a failure of the ack itself is not acked")
	}
}

func TestFound(t *testing.T) {
	for _, tt := range []struct {
		v     int
		err   error
		want  int
		found bool
		fails bool
	}{
		{3, nil, 3, true, false},
		{3, fmt.Errorf("topic %q: %w", "q", ErrNotFound), 0, false, false},
		{3, ErrUnavailable, 3, false, true},
	} {
		got, found, err := Found(tt.v, tt.err)
		if got != tt.want || found != tt.found || (err != nil) != tt.fails {
			t.Errorf("Found(%d, %v) = %d, %v, %v", tt.v, tt.err, got, found, err)
		}
	}
}

func TestMessage(t *testing.T) {
	if got := Message(fmt.Errorf("push: %w: OOM command not allowed", ErrOutOfMemory)); got != OutOfMemoryReason {
		t.Errorf("out of memory: %q", got)
	}
	if got := Message(fmt.Errorf("ack job 3: %w", ErrNotFound)); got != "ack job 3: not found" {
		t.Errorf("not found: %q", got)
	}
}
