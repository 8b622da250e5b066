package thrift_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	kestrelthrift "github.com/gmq/gmq/kestrel/thrift"
	"github.com/gmq/gmq/kestrel/thrift/wire"
)

// An open read belongs to the server: it outlives the connection that
// opened it, and another connection confirms it, once.
func TestConfirmFromAnotherConnection(t *testing.T) {
	_, addr := start(t, nil)
	first := dial(t, addr)
	first.put("r", 1, "one")
	items := first.get("r", 1, 0, 60_000, "one")
	if items[0].ID == 0 {
		t.Fatal("an open read's id is 0")
	}
	first.trans.Close()
	other := dial(t, addr)
	if info := other.peek("r"); info.Items != 0 || info.OpenTransactions != 1 {
		t.Fatalf("peek with the read open: %+v", info)
	}
	other.settled(false, "r", 1, items[0].ID)
	other.settled(false, "r", 0, items[0].ID) // once
	if info := other.peek("r"); info.Items != 0 || info.OpenTransactions != 0 {
		t.Fatalf("peek after the confirm: %+v", info)
	}
}

// abort gives a read back to the head of its queue; read again, it is the
// next delivery, whose id differs, and the old id settles nothing.
func TestAbortAndFencing(t *testing.T) {
	_, addr := start(t, nil)
	c := dial(t, addr)
	c.put("a", 2, "first", "second")
	old := c.get("a", 1, 0, 60_000, "first")[0].ID
	c.settled(true, "a", 1, old)
	c.settled(true, "a", 0, old)
	again := c.get("a", 1, 0, 60_000, "first")[0].ID // the head again
	if again == old {
		t.Fatalf("a new delivery has the old id %d", old)
	}
	c.settled(false, "a", 0, old) // names the delivery before: fenced
	c.settled(false, "a", 1, again, old, 0, -5)
	c.get("a", 1, 0, 0, "second")
}

// A read not confirmed within auto_abort_msec goes back; a confirm of it
// after it was delivered again settles nothing.
func TestAutoAbort(t *testing.T) {
	_, addr := start(t, nil)
	c := dial(t, addr)
	c.put("aa", 1, "late")
	old := c.get("aa", 1, 0, 300, "late")[0].ID
	brokertest.Eventually(t, "the read comes back", func() bool {
		info := c.peek("aa")
		return info.Items == 1 && info.OpenTransactions == 0
	})
	again := c.get("aa", 1, 0, 60_000, "late")[0].ID
	c.settled(false, "aa", 0, old)
	c.settled(false, "aa", 1, again)
	c.get("aa", 1, 0, 0)
}

// The keeper touches an open read's job, so it outlives its own TTR.
func TestTouchKeepsRead(t *testing.T) {
	b, addr := start(t, nil)
	brokertest.MustCall(t, http.StatusCreated, "POST", b.URL+"/api/v1/jobs", `{"topic":"t","body":"short","ttr":1}`)
	c := dial(t, addr)
	item := c.get("t", 1, 0, 60_000, "short")[0]
	number := strconv.FormatInt(item.ID>>10, 10)
	j, err := b.Dispatcher.Peek(ctx, number)
	if err != nil {
		t.Fatal(err)
	}
	firstDue := j.Due
	brokertest.Eventually(t, "its first TTR has passed", func() bool { return time.Now().After(firstDue.Add(500 * time.Millisecond)) })
	if j, err = b.Dispatcher.Peek(ctx, number); err != nil || j.State.String() != "reserved" || j.Attempt() != 1 {
		t.Fatalf("past its TTR: %+v, %v; want still reserved, attempt 1", j, err)
	}
	c.settled(false, "t", 1, item.ID)
}

// An id no read of this server holds (opened on another broker sharing
// the store) is settled by the delivery it carries.
func TestConfirmOnAnotherBroker(t *testing.T) {
	b, addr := start(t, nil)
	otherAddr := serve(t, b.Dispatcher, nil)
	c := dial(t, addr)
	c.put("o", 1, "x")
	id := c.get("o", 1, 0, 60_000, "x")[0].ID
	dial(t, otherAddr).settled(false, "o", 1, id)
	c.settled(false, "o", 0, id)
	if info := c.peek("o"); info.Items != 0 || info.OpenTransactions != 0 {
		t.Fatalf("peek: %+v", info)
	}
}

// A connection opens at most max_open_reads reads a queue; past them a
// reliable get gives nothing, a plain one is not held back, and another
// connection has its own.
func TestMaxOpenReads(t *testing.T) {
	_, addr := start(t, func(o *kestrelthrift.Options) { o.MaxOpenReads = 2 })
	c := dial(t, addr)
	c.put("m", 6, "a", "b", "c", "d", "e", "f")
	open := c.get("m", 5, 0, 60_000, "a", "b")
	c.get("m", 5, 0, 60_000)
	c.get("m", 1, 0, 0, "c")
	c.get("other", 1, 0, 60_000) // another queue's count: none there, none ready
	other := dial(t, addr)
	other.get("m", 5, 0, 60_000, "d", "e")
	c.settled(false, "m", 1, open[0].ID)
	c.get("m", 5, 0, 60_000, "f")
}

// A get waits for max_items until its timeout, holding no Redis
// connection, and puts over another connection wake it.
func TestGetWaitsForPut(t *testing.T) {
	b, addr := start(t, nil)
	waiting := dial(t, addr)
	got := make(chan []*wire.Item, 1)
	go func() {
		items, err := waiting.Get(ctx, "w", 2, 60_000, 0)
		if err != nil {
			t.Errorf("the waiting get: %v", err)
		}
		got <- items
	}()
	brokertest.Eventually(t, "the get waits", func() bool { return b.Dispatcher.WaitingOn("w") == 1 })
	other := dial(t, addr)
	other.put("w", 1, "one")
	brokertest.Eventually(t, "the get took one and waits for the next", func() bool {
		return other.peek("w").Items == 0 && b.Dispatcher.WaitingOn("w") == 1
	})
	other.put("w", 1, "two")
	if items := <-got; len(items) != 2 || string(items[0].Data) != "one" || string(items[1].Data) != "two" {
		t.Fatalf("the waiting get: %q", bodies(items))
	}
}

// A client that hangs up while its reliable get waits ends the wait, and
// the reads the get opened go back at once.
func TestHangUpGivesBack(t *testing.T) {
	b, addr := start(t, func(o *kestrelthrift.Options) { o.MaxOpenReads = 2 })
	c := dial(t, addr)
	c.put("h", 1, "held")
	waiting, nc := dialConn(t, addr)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if items, err := waiting.Get(ctx, "h", 2, 60_000, 60_000); err == nil {
			t.Errorf("the get of a closed connection answered %q", bodies(items))
		}
	}()
	brokertest.Eventually(t, "the get holds one and waits", func() bool {
		return c.peek("h").OpenTransactions == 1 && b.Dispatcher.WaitingOn("h") == 1
	})
	nc.Close()
	<-done
	brokertest.Eventually(t, "the hang-up ends the wait and gives the read back", func() bool {
		info := c.peek("h")
		return b.Dispatcher.WaitingOn("h") == 0 && info.Items == 1 && info.OpenTransactions == 0
	})
}
