package dispatcher

import (
	"testing"
	"time"
)

// onOthers counts each waiting consumer once per topic it waits on, past
// the topics given, whether they are known anywhere or not.
func TestWaitingOnOtherTopics(t *testing.T) {
	l := newWaitList()
	for _, topics := range [][]string{{"a"}, {"a", "b"}, {"c"}, {"d", "e"}} {
		l.add(newWaiter(topics))
	}
	for _, tc := range []struct {
		listed []string
		want   int
	}{
		{nil, 6},
		{[]string{"a"}, 4},
		{[]string{"a", "b", "c"}, 2},
		{[]string{"a", "b", "c", "d", "e", "f"}, 0},
		{[]string{"x", "y"}, 6},
	} {
		if got := l.onOthers(tc.listed); got != tc.want {
			t.Errorf("waiting past %v: %d, want %d", tc.listed, got, tc.want)
		}
	}
}

// A consumer's wait that ends by its timer just as a wake-up comes
// registers again with that wake-up still in its channel (pop.go wait's
// loop). The next wake-up then found the channel full and blocked, holding
// the list's lock: every pop, push and wake-up of the broker waited on it
// for ever (TestGroupMaxReservedAcrossBrokers hung so in make test, its
// broker's stacks showed notify in "chan send" and all else in Lock).
// Registering again takes the pending wake-up out and hands it back.
func TestWaiterRegisteredAgainWithAWakeUpPending(t *testing.T) {
	l := newWaitList()
	w := newWaiter([]string{"t"})
	if pending := l.add(w); pending != "" {
		t.Fatalf("a new waiter has a wake-up pending: %q", pending)
	}
	l.notify("t", 1) // sent; the waiter's timer fired first, so it is not read
	if pending := l.add(w); pending != "t" {
		t.Fatalf("registered again: pending %q, want the wake-up it did not read", pending)
	}
	done := make(chan struct{})
	go func() {
		l.notify("t", 1)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(time.Minute): // only for what never happens: it hung for ever
		t.Fatal("a wake-up to a waiter registered again blocked, holding the list's lock")
	}
	if got := <-w.wake; got != "t" {
		t.Fatalf("woken with %q", got)
	}
}
