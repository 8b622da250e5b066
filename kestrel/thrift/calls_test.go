package thrift_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/gmq/gmq/broker/brokertest"
	kestrelthrift "github.com/gmq/gmq/kestrel/thrift"
	"github.com/gmq/gmq/kestrel/thrift/wire"
)

// put and a plain get (auto_abort_msec 0): items in order, removed as
// they are read, ids 0; a put stops at the first item with no room.
func TestPutAndGet(t *testing.T) {
	_, addr := start(t, func(o *kestrelthrift.Options) { o.MaxItemSize = 8 })
	c := dial(t, addr)
	for _, tc := range []struct {
		name       string
		items      []string
		expiration int32
		put        int32
		max        int32
		want       []string
	}{
		{name: "two, then more asked", items: []string{"one", "two"}, put: 2, max: 5, want: []string{"one", "two"}},
		{name: "fewer asked", items: []string{"a", "b", "c"}, put: 3, max: 2, want: []string{"a", "b"}},
		{name: "none asked", items: []string{"x"}, put: 1, max: 0, want: nil},
		{name: "stops at one too big", items: []string{"ok", "far too big", "after"}, put: 1, max: 5, want: []string{"ok"}},
		{name: "empty item", items: []string{""}, put: 1, max: 1, want: []string{""}},
		{name: "expired at once", items: []string{"gone"}, expiration: -1, put: 1, max: 1, want: nil},
		{name: "expires later", items: []string{"kept"}, expiration: 60_000, put: 1, max: 1, want: []string{"kept"}},
	} {
		queue := strings.NewReplacer(" ", "_", ",", "").Replace(tc.name)
		got, err := c.Put(ctx, queue, bytesOf(tc.items), tc.expiration)
		if err != nil || got != tc.put {
			t.Fatalf("%s: put: %d, %v; want %d", tc.name, got, err, tc.put)
		}
		items := c.get(queue, tc.max, 0, 0, tc.want...)
		for _, it := range items {
			if it.ID != 0 {
				t.Errorf("%s: a plain get's item has id %d, want 0", tc.name, it.ID)
			}
		}
	}
	c.get("two_then_more_asked", 5, 0, 0) // removed
	c.get("fewer_asked", 5, 0, 0, "c")    // the one left
}

// An item put over Thrift is a job like any other, and the other way round.
func TestAcrossProtocols(t *testing.T) {
	b, addr := start(t, nil)
	c := dial(t, addr)
	c.put("x", 1, "from thrift")
	got := brokertest.MustCall(t, http.StatusOK, "GET", b.URL+"/api/v1/pop?topic=x", "")
	if got["body"] != "from thrift" {
		t.Fatalf("HTTP pop: %v", got)
	}
	brokertest.MustCall(t, http.StatusCreated, "POST", b.URL+"/api/v1/jobs", `{"topic":"x","body":"from http"}`)
	brokertest.MustCall(t, http.StatusCreated, "POST", b.URL+"/api/v1/jobs", `{"topic":"x","body":"with an id","id":"job-a"}`)
	c.get("x", 1, 0, 0, "from http")
	items := c.get("x", 1, 0, 60_000, "with an id") // a job with a client id is read and confirmed by its number
	c.settled(false, "x", 1, ids(items)...)
	if info := c.peek("x"); info.Items != 0 || info.OpenTransactions != 1 { // the HTTP pop's
		t.Fatalf("peek after: %+v", info)
	}
}

// peek tells the counts and shows the head item, leaving it.
func TestPeek(t *testing.T) {
	_, addr := start(t, nil)
	c := dial(t, addr)
	if info := c.peek("never"); info.IsSetHeadItem() || info.Items != 0 {
		t.Fatalf("peek at an unknown queue: %+v", info)
	}
	c.put("p", 3, "head", "second", "third")
	c.get("p", 1, 0, 60_000, "head") // open: not ready, reserved
	info := c.peek("p")
	if string(info.HeadItem) != "second" || info.Items != 2 || info.Bytes != int64(len("headsecondthird")) ||
		info.OpenTransactions != 1 || info.JournalBytes != 0 || info.Age < 0 {
		t.Fatalf("peek: %+v", info)
	}
	c.get("p", 1, 0, 0, "second") // the peek left it
}

// flush_queue, delete_queue and flush_all_queues remove what they name,
// and an unknown queue is no failure.
func TestFlushAndDelete(t *testing.T) {
	_, addr := start(t, nil)
	c := dial(t, addr)
	c.put("f", 2, "a", "b")
	c.put("g", 1, "c")
	c.put("h", 1, "d")
	for _, call := range []struct {
		name string
		do   func() error
	}{
		{"flush_queue", func() error { return c.FlushQueue(ctx, "f") }},
		{"flush_queue of none", func() error { return c.FlushQueue(ctx, "none") }},
		{"delete_queue", func() error { return c.DeleteQueue(ctx, "g") }},
		{"delete_queue of none", func() error { return c.DeleteQueue(ctx, "none") }},
	} {
		if err := call.do(); err != nil {
			t.Fatalf("%s: %v", call.name, err)
		}
	}
	c.get("f", 5, 0, 0)
	c.get("g", 5, 0, 0)
	c.get("h", 1, 0, 0, "d")
	c.put("h", 1, "e")
	if err := c.FlushAllQueues(ctx); err != nil {
		t.Fatal(err)
	}
	c.get("h", 5, 0, 0)
}

// current_status answers the announced status; set_status sets the
// fleet's, or one broker's with field 2; a status that refuses is told as
// an application exception naming its kind.
func TestStatus(t *testing.T) {
	b, addr := start(t, nil)
	c := dial(t, addr)
	status := func(want wire.Status) {
		t.Helper()
		brokertest.Eventually(t, "status "+want.String(), func() bool {
			got, err := c.CurrentStatus(ctx)
			return err == nil && got == want
		})
	}
	status(wire.Status_UP)
	if err := c.SetStatus(ctx, wire.Status_READ_ONLY, ""); err != nil {
		t.Fatal(err)
	}
	status(wire.Status_READ_ONLY)
	_, err := c.Put(ctx, "q", bytesOf([]string{"x"}), 0)
	wantException(t, err, "Internal error processing put: draining: ")
	if err := c.SetStatus(ctx, wire.Status_UP, ""); err != nil {
		t.Fatal(err)
	}
	if err := c.SetStatus(ctx, wire.Status_QUIESCENT, "this"); err != nil { // this broker's own
		t.Fatal(err)
	}
	status(wire.Status_QUIESCENT)
	_, err = c.Get(ctx, "q", 1, 0, 0)
	wantException(t, err, "Internal error processing get: draining: ")
	if err := c.SetStatus(ctx, wire.Status_UP, "this"); err != nil {
		t.Fatal(err)
	}
	status(wire.Status_UP)
	wantException(t, c.SetStatus(ctx, wire.Status_NOT_CONFIGURED, ""), "Internal error processing set_status: invalid: ")
	if b.Dispatcher.Status().Announced().String() != "up" {
		t.Fatalf("dispatcher status %v", b.Dispatcher.Status().Announced())
	}
	if v, err := c.GetVersion(ctx); err != nil || v != "test" {
		t.Fatalf("get_version: %q, %v", v, err)
	}
}

// A request the store refuses is an application exception, and the
// connection reads on.
func TestRefusals(t *testing.T) {
	_, addr := start(t, nil)
	c := dial(t, addr)
	bad := strings.Repeat("q", 300) // over the topic name's limit
	for _, call := range []struct {
		name string
		do   func() error
	}{
		{"put", func() error { _, err := c.Put(ctx, bad, bytesOf([]string{"x"}), 0); return err }},
		{"get", func() error { _, err := c.Get(ctx, bad, 1, 0, 0); return err }},
		{"peek", func() error { _, err := c.Peek(ctx, bad); return err }},
		{"flush_queue", func() error { return c.FlushQueue(ctx, bad) }},
		{"delete_queue", func() error { return c.DeleteQueue(ctx, bad) }},
	} {
		wantException(t, call.do(), "Internal error processing "+call.name+": invalid: ")
	}
	c.put("still", 1, "usable")
}

// An unknown method is answered UNKNOWN_METHOD, and the connection reads on.
func TestUnknownMethod(t *testing.T) {
	_, addr := start(t, nil)
	c := dial(t, addr)
	proto := thrift.NewTBinaryProtocolConf(c.trans, nil)
	_, err := thrift.NewTStandardClient(proto, proto).Call(ctx, "no_such_call", wire.NewKestrelGetVersionArgs(), wire.NewKestrelGetVersionResult())
	var tae thrift.TApplicationException
	if !errors.As(err, &tae) || tae.TypeId() != thrift.UNKNOWN_METHOD {
		t.Fatalf("unknown method: %v", err)
	}
	if v, err := c.GetVersion(ctx); err != nil || v != "test" {
		t.Fatalf("get_version after: %q, %v", v, err)
	}
}

// A frame over MaxRequest is not read: its call is answered with an
// exception and the connection closed.
func TestFrameTooBig(t *testing.T) {
	_, addr := start(t, func(o *kestrelthrift.Options) { o.MaxRequest = 1 << 10 })
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	msg := thrift.NewTMemoryBuffer()
	proto := thrift.NewTBinaryProtocolConf(msg, nil)
	if err := proto.WriteMessageBegin(ctx, "put", thrift.CALL, 7); err != nil {
		t.Fatal(err)
	}
	head := binary.BigEndian.AppendUint32(nil, 1<<20)
	if _, err := nc.Write(append(head, msg.Bytes()...)); err != nil {
		t.Fatal(err)
	}
	_ = nc.SetReadDeadline(time.Now().Add(replyWait))
	answer, err := io.ReadAll(nc) // the answer, then the close
	if err != nil {
		t.Fatal(err)
	}
	in := thrift.NewTBinaryProtocolConf(&thrift.TMemoryBuffer{Buffer: bytes.NewBuffer(answer[4:])}, nil)
	name, kind, seq, err := in.ReadMessageBegin(ctx)
	if err != nil || name != "put" || kind != thrift.EXCEPTION || seq != 7 {
		t.Fatalf("answer: %q %v %d %v", name, kind, seq, err)
	}
	x := thrift.NewTApplicationException(0, "")
	if err := x.Read(ctx, in); err != nil {
		t.Fatal(err)
	}
	wantException(t, x, "Internal error processing put: invalid: a 1048576-byte request, the limit is 1024 bytes")
}

// wantException checks that err is an application exception whose
// message starts with prefix.
func wantException(t *testing.T, err error, prefix string) {
	t.Helper()
	var tae thrift.TApplicationException
	if !errors.As(err, &tae) || !strings.HasPrefix(tae.Error(), prefix) {
		t.Fatalf("got %v, want an application exception %q…", err, prefix)
	}
}

// Observe is told each call's name and outcome; a made-up method is
// "other", so that clients cannot make new series.
func TestObserve(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	_, addr := start(t, func(o *kestrelthrift.Options) {
		o.Observe = func(op, code string, _ time.Duration) {
			mu.Lock()
			seen = append(seen, op+" "+code)
			mu.Unlock()
		}
	})
	c := dial(t, addr)
	c.put("o", 1, "x")
	c.get("o", 1, 0, 0, "x")
	_, err := c.Peek(ctx, strings.Repeat("q", 300))
	wantException(t, err, "Internal error processing peek: invalid: ")
	proto := thrift.NewTBinaryProtocolConf(c.trans, nil)
	_, err = thrift.NewTStandardClient(proto, proto).Call(ctx, "made_up", wire.NewKestrelGetVersionArgs(), wire.NewKestrelGetVersionResult())
	if err == nil {
		t.Fatal("a made-up method answered")
	}
	if _, err := c.GetVersion(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{"put ok", "get ok", "peek client_error", "other client_error", "get_version ok"}
	brokertest.Eventually(t, "every call observed", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) >= len(want)
	})
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(seen, ", ") != strings.Join(want, ", ") {
		t.Fatalf("observed %q, want %q", seen, want)
	}
}
