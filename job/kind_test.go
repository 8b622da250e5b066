package job

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

func TestKindOf(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want Kind
	}{
		{nil, KindInternal},
		{errors.New("boom"), KindInternal},
		{fmt.Errorf("ack 3: %w", ErrNotFound), KindNotFound},
		{&StaleError{Attempt: 1, Current: 2}, KindConflict},
		{&StateError{Op: "touch", State: Ready}, KindConflict},
		{ErrDuplicate, KindConflict},
		{ErrOtherJob, KindConflict},
		{fmt.Errorf("topic %q: %w", "a b", ErrInvalid), KindInvalid},
		{ErrTooBig, KindTooBig},
		{ErrFull, KindFull},
		{fmt.Errorf("%w: %w", ErrUnavailable, ErrOutOfMemory), KindOutOfMemory}, // maxmemory first
		{ErrUnavailable, KindRetryLater},
		{ErrBusy, KindRetryLater},
		{context.DeadlineExceeded, KindRetryLater},
		{&StatusError{Op: "push", Status: ReadOnly}, KindDraining},
		{ErrTooManyWaiting, KindOverloaded},
		{fmt.Errorf("touch job 3: %w", ErrCancelled), KindCancelled},
		{&AckedError{Err: ErrUnavailable}, KindRetryLater},
	} {
		if got := KindOf(tt.err); got != tt.want {
			t.Errorf("KindOf(%v) = %s, want %s", tt.err, got, tt.want)
		}
	}
}

func TestKindNames(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range Kinds() {
		name := k.String()
		if name == "" || seen[name] {
			t.Errorf("kind %d is named %q, empty or twice", k, name)
		}
		seen[name] = true
	}
	if Kind(200).String() != "internal" {
		t.Errorf("an unknown kind is %q, want internal", Kind(200).String())
	}
}

func TestKindClient(t *testing.T) {
	for _, k := range Kinds() {
		want := k == KindNotFound || k == KindConflict || k == KindInvalid || k == KindTooBig || k == KindFull || k == KindCancelled
		if k.Client() != want {
			t.Errorf("%s.Client() = %v", k, k.Client())
		}
	}
}
