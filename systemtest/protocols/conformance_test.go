package protocols

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/gmq/gmq/internal/redistest"
	thriftwire "github.com/gmq/gmq/kestrel/thrift/wire"
	"github.com/gmq/gmq/systemtest/harness"
)

// The conformance suite: one table of scenarios (what the client meets) by
// front ends (how each protocol answers it), run against one broker process
// and a real Redis. Each front end answers a kind of error through its own
// answers table (web, beanstalk, kestrel/memcache, kestrel/text, kestrel/thrift, gmqrpc answers.go; job.Kind); this
// is what those tables say on the wire, side by side. A new front end joins
// by adding its column: a field of conformance, filled for every scenario
// it has a request for, and its case in TestConformance's run.

// wire is one request on a TCP front end and its answer: send on a new
// connection, the answer's first line after skip lines (a beanstalkd `use`
// answered before the put), and whether the server closes the connection
// after it.
type wire struct {
	send   string
	skip   int
	want   string // the answer's line, or its start when it ends in "..."
	closes bool
}

// call is one HTTP request and its status, and a word its error says.
type call struct {
	method, path, body string
	status             int
	says               string
}

// thriftCall is one call on kestrel's thrift port (a generated client,
// framed and binary as Finagle's) and what it answers: its result as %v
// prints it, or its exception's message (its start, when want ends in
// "..."), and whether the server closes the connection after it.
type thriftCall struct {
	call   func(ctx context.Context, c *thriftwire.KestrelClient) (any, error)
	want   string
	closes bool
}

// rpcCall is one JSON-RPC call and the start of its error ("" : none) or
// its result.
type rpcCall struct {
	method, params string
	err            string
}

type conformance struct {
	name      string
	setup     func(t *testing.T, b *harness.BrokerProc, redis *redistest.Server) // nil: none; undone by t.Cleanup
	http      call
	beanstalk wire
	kestrel   wire
	text      wire // kestrel's text protocol
	thrift    thriftCall
	rpc       rpcCall
}

var conformanceTable = []conformance{
	{
		name:      "an unknown job",
		http:      call{"POST", "/api/v1/jobs/nope-1/ack", `{}`, 404, `ack "nope-1": not found`},
		beanstalk: wire{send: "delete 999999999\r\n", want: "NOT_FOUND"},
		// kestrel names no job: a close of a read it never opened is END.
		kestrel: wire{send: "get c-unknown/close\r\n", want: "END"},
		text:    wire{send: "confirm c-unknown 1\n", want: "-Not that many transactions open."},
		thrift:  thriftCall{call: thriftConfirm("c-unknown", 1), want: "0"}, // kestrel counts what it confirmed
		rpc:     rpcCall{"Service.Ack", `["nope-1"]`, `not_found: ack "nope-1": not found`},
	},
	{
		name: "a stale attempt",
		setup: func(t *testing.T, b *harness.BrokerProc, _ *redistest.Server) {
			b.Must(201, "POST", "/api/v1/jobs", `{"id":"c-stale","topic":"c-stale","body":"x","ttr":600}`)
			b.Must(200, "POST", "/api/v1/pop", `{"topics":["c-stale"]}`)
		},
		http: call{"POST", "/api/v1/jobs/c-stale/ack", `{"attempt":2}`, 409, "stale delivery"},
		// beanstalkd and kestrel name no delivery: their stale answers are
		// a TTR that ran out (NOT_FOUND, and a read's END), shown by their
		// own suites.
		rpc: rpcCall{"Service.Ack", `[{"id":"c-stale","attempt":2}]`, `conflict: ack "c-stale": stale delivery`},
	},
	{
		name: "a full topic",
		setup: func(t *testing.T, b *harness.BrokerProc, _ *redistest.Server) {
			b.Must(200, "PUT", "/api/v1/topics/c-full/config", `{"max_items":1}`)
			b.Must(201, "POST", "/api/v1/jobs", `{"topic":"c-full","body":"first"}`)
		},
		http:      call{"POST", "/api/v1/jobs", `{"topic":"c-full","body":"x"}`, 507, "full"},
		beanstalk: wire{send: "use c-full\r\nput 0 0 60 1\r\nx\r\n", skip: 1, want: "OUT_OF_MEMORY"},
		kestrel:   wire{send: "set c-full 0 0 1\r\nx\r\n", want: "NOT_STORED"},
		text:      wire{send: "put c-full:\nx\n\n", want: "+0"}, // kestrel counts what its queue took
		thrift:    thriftCall{call: thriftPut("c-full", "x"), want: "0"},
		rpc:       rpcCall{"Service.Push", `[{"topic":"c-full","body":"x"}]`, "full: "},
	},
	{
		name: "a body too big for its topic",
		setup: func(t *testing.T, b *harness.BrokerProc, _ *redistest.Server) {
			b.Must(200, "PUT", "/api/v1/topics/c-big/config", `{"max_item_size":4}`)
		},
		http:      call{"POST", "/api/v1/jobs", `{"topic":"c-big","body":"123456"}`, 413, "too big"},
		beanstalk: wire{send: "use c-big\r\nput 0 0 60 6\r\n123456\r\n", skip: 1, want: "JOB_TOO_BIG"},
		kestrel:   wire{send: "set c-big 0 0 6\r\n123456\r\n", want: "NOT_STORED"},
		text:      wire{send: "put c-big:\n123456\n\n", want: "+0"},
		thrift:    thriftCall{call: thriftPut("c-big", "123456"), want: "0"},
		rpc:       rpcCall{"Service.Push", `[{"topic":"c-big","body":"123456"}]`, "too_big: "},
	},
	{
		name:      "a bad argument",
		http:      call{"POST", "/api/v1/jobs", `{"topic":"c-bad","body":"x","delay":-1}`, 400, "delay"},
		beanstalk: wire{send: "put x 0 60 1\r\nx\r\n", want: "BAD_FORMAT"},
		kestrel:   wire{send: "set c-bad 0 soon 1\r\nx\r\n", want: "CLIENT_ERROR ..."},
		text:      wire{send: "get c-bad soon\n", want: "-Error parsing timeout."},
		thrift: thriftCall{call: func(ctx context.Context, c *thriftwire.KestrelClient) (any, error) {
			return nil, c.SetStatus(ctx, 99, "")
		}, want: "Internal error processing set_status: invalid: ..."},
		rpc: rpcCall{"Service.Push", `[{"topic":"c-bad","body":"x","delay":"soon"}]`, "invalid: "},
	},
	{
		name: "a paused topic", // not an error: nothing to take, in each protocol's words
		setup: func(t *testing.T, b *harness.BrokerProc, _ *redistest.Server) {
			b.Must(201, "POST", "/api/v1/jobs", `{"topic":"c-paused","body":"x"}`)
			b.Must(200, "POST", "/api/v1/topics/c-paused/pause", `{"seconds":3600}`)
		},
		http:      call{"POST", "/api/v1/pop", `{"topics":["c-paused"],"timeout":0}`, 204, ""},
		beanstalk: wire{send: "watch c-paused\r\nreserve-with-timeout 0\r\n", skip: 1, want: "TIMED_OUT"},
		kestrel:   wire{send: "get c-paused\r\n", want: "END"},
		text:      wire{send: "get c-paused\n", want: "*"},
		thrift:    thriftCall{call: thriftGet("c-paused", 0), want: "[]"},
		rpc:       rpcCall{"Service.Pop", `[["c-paused"]]`, "empty"},
	},
	{
		name: "a job cancelled while held", // its consumer learns it at its next call; beanstalkd and memcache name no cancel (a gone job)
		setup: func(t *testing.T, b *harness.BrokerProc, _ *redistest.Server) {
			b.Must(200, "PUT", "/api/v1/topics/c-cancel/config", `{"keep_completed": 600}`) // kept, it is still there to be told of
			b.Must(201, "POST", "/api/v1/jobs", `{"id":"c-cancel-1","topic":"c-cancel","body":"x"}`)
			b.Must(200, "GET", "/api/v1/pop?topic=c-cancel", ``)
			b.Must(202, "POST", "/api/v1/jobs/c-cancel-1/cancel", ``)
		},
		http: call{"POST", "/api/v1/jobs/c-cancel-1/touch", `{"attempt":1}`, 410, "cancelled"},
		rpc:  rpcCall{"Service.Ack", `[{"id":"c-cancel-1","attempt":1}]`, "cancelled: "},
	},
	{
		name: "a draining broker",
		setup: func(t *testing.T, b *harness.BrokerProc, _ *redistest.Server) {
			b.Must(200, "PUT", "/api/v1/status", `{"status":"readonly"}`)
			t.Cleanup(func() { b.Must(200, "PUT", "/api/v1/status", `{"status":"up"}`) })
		},
		http:      call{"POST", "/api/v1/jobs", `{"topic":"c-drain","body":"x"}`, 503, "readonly"},
		beanstalk: wire{send: "put 0 0 60 1\r\nx\r\n", want: "DRAINING"},
		kestrel:   wire{send: "set c-drain 0 0 1\r\nx\r\n", want: "SERVER_ERROR ...", closes: true},
		text:      wire{send: "put c-drain:\nx\n\n", want: "-item 1 of 1 (0 put before it): push: the server status is readonly..."},
		thrift:    thriftCall{call: thriftPut("c-drain", "x"), want: "Internal error processing put: draining: ..."},
		rpc:       rpcCall{"Service.Push", `[{"topic":"c-drain","body":"x"}]`, "draining: "},
	},
	{
		name: "Redis out of memory",
		setup: func(t *testing.T, b *harness.BrokerProc, redis *redistest.Server) {
			if reply, err := redis.Do("CONFIG", "SET", "maxmemory", "1"); err != nil || reply != "+OK" {
				t.Fatalf("CONFIG SET maxmemory: %q %v", reply, err)
			}
			t.Cleanup(func() { _, _ = redis.Do("CONFIG", "SET", "maxmemory", "0") })
		},
		http:      call{"POST", "/api/v1/jobs", `{"topic":"c-oom","body":"x"}`, 503, "out of memory"},
		beanstalk: wire{send: "use c-oom\r\nput 0 0 60 1\r\nx\r\n", skip: 1, want: "OUT_OF_MEMORY"},
		kestrel:   wire{send: "set c-oom 0 0 1\r\nx\r\n", want: "NOT_STORED"},
		text:      wire{send: "put c-oom:\nx\n\n", want: "+0"},
		thrift:    thriftCall{call: thriftPut("c-oom", "x"), want: "0"},
		rpc:       rpcCall{"Service.Push", `[{"topic":"c-oom","body":"x"}]`, "out_of_memory: "},
	},
	{
		name: "an overloaded broker", // [jobs] max_waiting = 1 (TestConformance), held by a long poll
		setup: func(t *testing.T, b *harness.BrokerProc, _ *redistest.Server) {
			held := make(chan struct{})
			go func() { // ends with its long poll, at the latest its timeout
				defer close(held)
				_, _ = b.Do("POST", "/api/v1/pop", `{"topics":["c-held"],"timeout":60}`)
			}()
			harness.WaitUntil(t, "the broker's one waiting slot taken", func() bool {
				a, err := b.Do("GET", "/api/v1/stats", "")
				return err == nil && a.Body["current_waiting"] == float64(1)
			})
			t.Cleanup(func() {
				b.Must(201, "POST", "/api/v1/jobs", `{"topic":"c-held","body":"let it go"}`)
				<-held
			})
		},
		http:      call{"POST", "/api/v1/pop", `{"topics":["c-over"],"timeout":5}`, 429, "waiting"},
		beanstalk: wire{send: "watch c-over\r\nreserve-with-timeout 5\r\n", skip: 1, want: "OUT_OF_MEMORY"},
		kestrel:   wire{send: "get c-over/t=5000\r\n", want: "SERVER_ERROR ...", closes: true},
		text:      wire{send: "get c-over 5000\n", want: "-..."},
		thrift:    thriftCall{call: thriftGet("c-over", 5000), want: "Internal error processing get: overloaded: ..."},
		rpc:       rpcCall{"Service.Pop", `[["c-over"]]`, "overloaded: "},
	},
	{
		name: "Redis down", // last: the broker serves again once Redis is back, as the fault tests show
		setup: func(t *testing.T, b *harness.BrokerProc, redis *redistest.Server) {
			redis.Terminate()
			t.Cleanup(func() {
				if err := redis.StartAgain(); err != nil {
					t.Error(err)
				}
			})
		},
		http:      call{"POST", "/api/v1/jobs", `{"topic":"c-down","body":"x"}`, 503, "redis"},
		beanstalk: wire{send: "put 0 0 60 1\r\nx\r\n", want: "INTERNAL_ERROR"},
		kestrel:   wire{send: "set c-down 0 0 1\r\nx\r\n", want: "SERVER_ERROR ...", closes: true},
		text:      wire{send: "put c-down:\nx\n\n", want: "-..."},
		thrift:    thriftCall{call: thriftPut("c-down", "x"), want: "Internal error processing put: retry_later: ..."},
		rpc:       rpcCall{"Service.Push", `[{"topic":"c-down","body":"x"}]`, "retry_later: "},
	},
}

// TestConformance runs every scenario through every front end that has a
// request for it, one scenario at a time (some change the whole broker:
// its status, Redis's maxmemory).
func TestConformance(t *testing.T) {
	t.Parallel()
	redis := redistest.Start(t)
	b := harness.StartBroker(t, redis.URL())
	// One consumer may wait at once, so that "an overloaded broker" can fill
	// the broker's waiting slots with one long poll.
	b.RestartWith("", "[redis]\nbuckets = 4\n[bucket]\nmax_sleep = 200ms\n[jobs]\nmax_waiting = 1\n")
	for _, sc := range conformanceTable {
		t.Run(sc.name, func(t *testing.T) {
			if sc.setup != nil {
				sc.setup(t, b, redis)
			}
			if sc.http.method != "" {
				a, err := b.Do(sc.http.method, sc.http.path, sc.http.body)
				msg, _ := a.Body["error"].(string)
				if err != nil || a.Code != sc.http.status || !strings.Contains(msg, sc.http.says) {
					t.Errorf("http %s %s: %d %v %v, want %d saying %q", sc.http.method, sc.http.path, a.Code, a.Body, err,
						sc.http.status, sc.http.says)
				}
			}
			if sc.beanstalk.send != "" {
				sc.beanstalk.check(t, "beanstalk", b.Beanstalk)
			}
			if sc.kestrel.send != "" {
				sc.kestrel.check(t, "kestrel", b.Kestrel)
			}
			if sc.text.send != "" {
				sc.text.check(t, "text", b.Text)
			}
			if sc.thrift.call != nil {
				sc.thrift.check(t, b.Thrift)
			}
			if sc.rpc.method != "" {
				sc.rpc.check(t, b.RPC)
			}
		})
	}
}

// check sends w on a new connection to addr and checks its answer, and
// whether the connection is closed after it (or answers the next request).
func (w wire) check(t *testing.T, port, addr string) {
	t.Helper()
	c := harness.SendOn(t, addr, w.send)
	r := bufio.NewReader(c)
	var line string
	var err error
	for range w.skip + 1 {
		if line, err = r.ReadString('\n'); err != nil {
			t.Fatalf("%s %q: %q %v", port, w.send, line, err)
		}
	}
	line = strings.TrimRight(line, "\r\n")
	if want, ok := strings.CutSuffix(w.want, "..."); (ok && !strings.HasPrefix(line, want)) || (!ok && line != w.want) {
		t.Errorf("%s %q: %q, want %q", port, w.send, line, w.want)
	}
	// Closed, or reading on: its next request is answered. Each port's
	// cheapest: beanstalkd's list-tube-used, kestrel's version.
	next := map[string]string{"beanstalk": "list-tube-used\r\n", "kestrel": "version\r\n", "text": "version\n"}[port]
	_, _ = c.Write([]byte(next))
	got, err := r.ReadString('\n')
	closed := errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || (err != nil && strings.Contains(err.Error(), "reset"))
	if closed != w.closes || (!closed && err != nil) {
		t.Errorf("%s %q: after the answer, closed %v (%q %v), want %v", port, w.send, closed, got, err, w.closes)
	}
}

// check makes call c on a new connection to addr and checks its answer,
// and whether the connection is closed after it (or answers get_version).
func (c thriftCall) check(t *testing.T, addr string) {
	t.Helper()
	cfg := &thrift.TConfiguration{ConnectTimeout: time.Second, SocketTimeout: 10 * time.Second}
	trans := thrift.NewTFramedTransportConf(thrift.NewTSocketConf(addr, cfg), cfg)
	if err := trans.Open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { trans.Close() })
	client := thriftwire.NewKestrelClientFactory(trans, thrift.NewTBinaryProtocolFactoryConf(cfg))
	ctx := context.Background()
	v, err := c.call(ctx, client)
	got := fmt.Sprint(v)
	if err != nil {
		got = err.Error()
	}
	if want, ok := strings.CutSuffix(c.want, "..."); (ok && !strings.HasPrefix(got, want)) || (!ok && got != c.want) {
		t.Errorf("thrift: %q, want %q", got, c.want)
	}
	_, err = client.GetVersion(ctx)
	if closed := err != nil; closed != c.closes {
		t.Errorf("thrift: after the answer, closed %v (%v), want %v", closed, err, c.closes)
	}
}

// thriftPut, thriftGet and thriftConfirm are the thrift calls the scenarios make: put items
// on queue; get one item of queue, waiting up to timeoutMs, removed at once;
// confirm ids of queue.
func thriftPut(queue string, items ...string) func(context.Context, *thriftwire.KestrelClient) (any, error) {
	return func(ctx context.Context, c *thriftwire.KestrelClient) (any, error) {
		data := make([][]byte, len(items))
		for i, it := range items {
			data[i] = []byte(it)
		}
		return c.Put(ctx, queue, data, 0)
	}
}

func thriftGet(queue string, timeoutMs int32) func(context.Context, *thriftwire.KestrelClient) (any, error) {
	return func(ctx context.Context, c *thriftwire.KestrelClient) (any, error) {
		return c.Get(ctx, queue, 1, timeoutMs, 0)
	}
}

func thriftConfirm(queue string, ids ...int64) func(context.Context, *thriftwire.KestrelClient) (any, error) {
	return func(ctx context.Context, c *thriftwire.KestrelClient) (any, error) {
		return c.Confirm(ctx, queue, ids)
	}
}

// check makes call r on a new connection to addr and checks its error.
func (r rpcCall) check(t *testing.T, addr string) {
	t.Helper()
	c := harness.SendOn(t, addr, `{"method":`+strconv.Quote(r.method)+`,"params":`+r.params+`,"id":1}`+"\n")
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatalf("rpc %s: %q %v", r.method, line, err)
	}
	var got struct {
		Error *string `json:"error"`
	}
	if err := json.Unmarshal([]byte(line), &got); err != nil || got.Error == nil || !strings.HasPrefix(*got.Error, r.err) {
		t.Errorf("rpc %s %s: %s, want an error starting %q", r.method, r.params, line, r.err)
	}
}
