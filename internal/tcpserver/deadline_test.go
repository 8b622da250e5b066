package tcpserver

import (
	"context"
	"testing"
	"time"
)

// Each request's context ends between four fifths of the timeout and the
// timeout after the request begins; one context serves a fifth of it, and
// Stop (or the parent) ends it.
func TestDeadline(t *testing.T) {
	parent, cancelParent := context.WithCancel(context.Background())
	defer cancelParent()
	const timeout = 500 * time.Millisecond
	d := NewDeadline(parent, timeout)
	defer d.Stop()
	first := d.Context()
	for range 3 {
		// The clock read just before and just after the call: however long
		// a loaded machine keeps this goroutine off the CPU between them,
		// the context ends at least 4/5 of the timeout after the one and at
		// most the timeout after the other.
		before := time.Now()
		ctx := d.Context()
		begun := time.Now()
		dl, ok := ctx.Deadline()
		if !ok || dl.Sub(begun) > timeout || dl.Sub(before) < timeout*4/5-5*time.Millisecond {
			t.Fatalf("a request's context ends %v after it began (%v after the call), want within [%v, %v]",
				dl.Sub(begun), dl.Sub(before), timeout*4/5, timeout)
		}
		time.Sleep(timeout / 8)
	}
	if d.Context() == first {
		t.Fatal("the context was not renewed after a fifth of the timeout")
	}
	now := d.Context()
	if again := d.Context(); again != now {
		t.Fatal("two requests in a row got two contexts")
	}
	d.Stop()
	if now.Err() == nil {
		t.Fatal("Stop did not end the context")
	}
	later := d.Context()
	cancelParent()
	if later.Err() == nil {
		t.Fatal("the parent's end did not end the context")
	}
}
