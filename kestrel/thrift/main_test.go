package thrift_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/gmq/gmq/broker"
	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
	"github.com/gmq/gmq/dispatcher"
	"github.com/gmq/gmq/kestrel/internal/kestreltest"
	kestrelthrift "github.com/gmq/gmq/kestrel/thrift"
	"github.com/gmq/gmq/kestrel/thrift/wire"
)

func TestMain(m *testing.M) { brokertest.Main(m) }

// The broker serves it as it serves every front end.
var _ broker.FrontEnd = (*kestrelthrift.Server)(nil)

// start runs a fresh broker (a real Redis, flushed) and a Thrift server
// over its dispatcher on 127.0.0.1:0, with the options the broker would
// give it, changed by tweak (may be nil). It returns the broker and the
// server's address; both stop when the test ends.
func start(t *testing.T, tweak func(*kestrelthrift.Options)) (*brokertest.Broker, string) {
	t.Helper()
	b := brokertest.Fresh(t, nil)
	return b, serve(t, b.Dispatcher, tweak)
}

// serve runs a Thrift server over d on 127.0.0.1:0 until the test ends and
// returns its address.
func serve(t *testing.T, d *dispatcher.Dispatcher, tweak func(*kestrelthrift.Options)) string {
	t.Helper()
	cfg := config.Default()
	opts := kestrelthrift.Options{Version: "test", MaxItemSize: cfg.MaxBody, MaxRequest: cfg.MaxRequestBody,
		MaxOpenReads: cfg.KestrelMaxOpenReads, DefaultTTR: cfg.DefaultTTR, Options: kestreltest.Options(t)}
	if tweak != nil {
		tweak(&opts)
	}
	return kestreltest.Serve(t, kestrelthrift.New(d, opts))
}

// replyWait is how long an answer is waited for: only one that never comes
// waits that long, and a loaded machine may take seconds over one.
const replyWait = time.Minute

// client is a Go client of the generated code: framed transport, binary
// protocol, as Finagle's.
type client struct {
	*wire.KestrelClient
	t     *testing.T
	trans thrift.TTransport
}

func dial(t *testing.T, addr string) *client {
	t.Helper()
	cfg := &thrift.TConfiguration{ConnectTimeout: 5 * time.Second, SocketTimeout: replyWait}
	trans := thrift.NewTFramedTransportConf(thrift.NewTSocketConf(addr, cfg), cfg)
	if err := trans.Open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { trans.Close() })
	return &client{KestrelClient: wire.NewKestrelClientFactory(trans, thrift.NewTBinaryProtocolFactoryConf(cfg)), t: t, trans: trans}
}

var ctx = context.Background()

// put puts items on queue and checks how many were put.
func (c *client) put(queue string, want int32, items ...string) {
	c.t.Helper()
	got, err := c.Put(ctx, queue, bytesOf(items), 0)
	if err != nil || got != want {
		c.t.Fatalf("put %q %q: %d, %v; want %d", queue, items, got, err, want)
	}
}

// get gets up to max items of queue, waiting up to timeoutMs, opened for
// autoAbortMs, and checks their bodies.
func (c *client) get(queue string, max, timeoutMs, autoAbortMs int32, want ...string) []*wire.Item {
	c.t.Helper()
	items, err := c.Get(ctx, queue, max, timeoutMs, autoAbortMs)
	if err != nil {
		c.t.Fatalf("get %q: %v", queue, err)
	}
	if got := bodies(items); strings.Join(got, "|") != strings.Join(want, "|") || len(got) != len(want) {
		c.t.Fatalf("get %q: %q, want %q", queue, got, want)
	}
	return items
}

// peek peeks at queue.
func (c *client) peek(queue string) *wire.QueueInfo {
	c.t.Helper()
	info, err := c.Peek(ctx, queue)
	if err != nil {
		c.t.Fatalf("peek %q: %v", queue, err)
	}
	return info
}

// settled checks what confirm (or abort) of ids answers.
func (c *client) settled(abort bool, queue string, want int32, ids ...int64) {
	c.t.Helper()
	call, name := c.Confirm, "confirm"
	if abort {
		call, name = c.Abort, "abort"
	}
	if got, err := call(ctx, queue, ids); err != nil || got != want {
		c.t.Fatalf("%s %v: %d, %v; want %d", name, ids, got, err, want)
	}
}

func bytesOf(items []string) [][]byte {
	out := make([][]byte, len(items))
	for i, s := range items {
		out[i] = []byte(s)
	}
	return out
}

func bodies(items []*wire.Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = string(it.Data)
	}
	return out
}

func ids(items []*wire.Item) []int64 {
	out := make([]int64, len(items))
	for i, it := range items {
		out[i] = it.ID
	}
	return out
}

// dialConn is dial over a connection the test may close from another
// goroutine (net.Conn's Close is safe there; the client's is not), to hang
// up on a call that waits.
func dialConn(t *testing.T, addr string) (*client, net.Conn) {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	cfg := &thrift.TConfiguration{SocketTimeout: replyWait}
	trans := thrift.NewTFramedTransportConf(thrift.NewTSocketFromConnConf(nc, cfg), cfg)
	return &client{KestrelClient: wire.NewKestrelClientFactory(trans, thrift.NewTBinaryProtocolFactoryConf(cfg)), t: t, trans: trans}, nc
}
