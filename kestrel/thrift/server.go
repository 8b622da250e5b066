// Package thrift speaks Twitter kestrel's Thrift protocol over the
// dispatcher (kestrel's Kestrel service, kestrel.thrift here, with
// kestrel's field ids), so that kestrel's Thrift clients (Finagle's
// kestrel client, or any generated from the IDL) work with gmq, and an
// item put here can be popped over HTTP, beanstalkd's, memcache's or the
// text protocol and the other way round. It owns the connections and the
// open reads; the items are jobs in the store.
//
// Each connection carries framed requests (a 4-byte big-endian length,
// then a message of Thrift's binary protocol), one at a time, each answered
// by the generated processor (wire/) calling this package's handler. What
// it maps, and how:
//   - put(queue, items, expiration_msec) pushes each item, in order, as a
//     job with [jobs] default_ttr, so that a reliable read can hold it,
//     expiring expiration_msec from now when it is not 0 (less than 0: at
//     once, as kestrel), and answers how many were put. It stops at the
//     first item that finds no room (over MaxItemSize, its queue full,
//     Redis at maxmemory), as kestrel does, so the count is always of the
//     first items and a client can send the rest again.
//   - get(queue, max_items, timeout_msec, auto_abort_msec) waits up to
//     timeout_msec for max_items (at most 1,024), holding no Redis
//     connection while it waits, and answers what came. With
//     auto_abort_msec 0 each item is removed as it is read, and its id is
//     0. With more, each is reserved as an open read, whose id confirm or
//     abort names: unless confirmed within auto_abort_msec it goes back to
//     the head of its queue. Open reads belong to the server, not to the
//     connection (Finagle pools connections): they outlive the connection
//     that opened them and any connection may confirm them. One goroutine
//     keeps them: it touches each job before its own TTR runs out and gives
//     it back when its time is up. A broker that dies with reads open loses
//     the touches: the jobs' TTRs run out and they are delivered again.
//     A connection opens at most MaxOpenReads reads a queue (kestrel's
//     max_open_reads); past them a reliable get answers no items.
//   - An id is the job's number and the delivery it was (its attempt),
//     packed (ids.go), so a confirm or abort that comes after the job was
//     delivered again (its TTR ran out, or it was given back and read
//     again) settles nothing rather than another reader's delivery.
//     confirm and abort answer how many they settled, and work on any
//     broker sharing the store.
//   - peek answers the queue's counts (TopicStats: ready items, bytes,
//     reserved jobs as open_transactions, this broker's waiters) and its
//     head item, left where it is.
//   - flush_queue, delete_queue and flush_all_queues flush, delete and
//     flush every topic; current_status answers the status this broker
//     announces and set_status sets the fleet's (gmq's optional field 2
//     names a broker, or "this", to set that broker's own).
//
// Every failure is a TApplicationException (INTERNAL_ERROR, as kestrel's
// Finagle server answers an exception) whose message, after the
// processor's "Internal error processing <method>: ", starts with the kind
// of error (answers.go: "draining: ", "full: ", "retry_later: "...), so a
// client can tell what to retry.
//
// Where gmq departs from kestrel: confirm and abort fence each id by its
// delivery; a get gives at most 1,024 items and a plain get (auto_abort_msec
// 0) is not held back by the connection's open reads; a reliable get whose
// client hangs up while it waits gives back the reads it opened (a plain
// one has removed what it took, as kestrel's has); current_status answers
// NOT_CONFIGURED for gmq's advisory writeavoid, which kestrel's enum lacks;
// peek's journal_bytes is 0, and its waiters are this broker's.
package thrift

import (
	"context"
	"log/slog"
	"math"
	"net"
	"sync/atomic"
	"time"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/gmq/gmq/dispatcher"
	"github.com/gmq/gmq/internal/budget"
	"github.com/gmq/gmq/internal/tcpserver"
)

// Options configure the protocol server.
type Options struct {
	Version     string // answered to get_version
	MaxItemSize int    // bytes: a put stops at a larger item, which it does not put
	// MaxRequest bounds a frame's bytes: a larger one is refused with an
	// exception and the connection closed.
	MaxRequest int
	// ReadTimeout bounds how long a frame, once begun, may take to arrive
	// (0: no limit); an idle connection waits as long as it likes.
	ReadTimeout time.Duration
	// Budget is the memory of request frames, shared with every port
	// ([server] body_memory; nil: none).
	Budget *budget.Budget
	// MaxOpenReads is how many reads a connection may hold open on a
	// queue (kestrel's max_open_reads; less than 1: 1, kestrel's default).
	MaxOpenReads int
	// DefaultTTR is the TTR of the jobs put here: how long an open read
	// holds its job if the server stops touching it.
	DefaultTTR time.Duration
	// RequestTimeout bounds the store calls of one call (a get: plus its
	// wait; a put: each item's push).
	RequestTimeout time.Duration
	// Observe, when set, is told how long each call took (for metrics).
	Observe func(op, code string, took time.Duration)
	Log     *slog.Logger
}

// Server serves kestrel's Thrift protocol. Serve it on a listener; Close it once.
type Server struct {
	d      *dispatcher.Dispatcher
	opts   Options
	log    *slog.Logger
	cfg    *thrift.TConfiguration // bounds what a frame's message may claim
	tcp    *tcpserver.Server
	reads  *registry       // the open reads, every connection's
	ctx    context.Context // ends the connections' waits on Close
	cancel context.CancelFunc
	conns  atomic.Uint64 // numbers the connections (a read's owner)
}

// New returns a protocol server over d. Every option must be set (the
// defaults are config.Default's kestrel ones) but Observe; Log may be nil.
func New(d *dispatcher.Dispatcher, opts Options) *Server {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	opts.MaxOpenReads = max(opts.MaxOpenReads, 1)
	ctx, cancel := context.WithCancel(context.Background())
	limit := int32(min(opts.MaxRequest, math.MaxInt32))
	s := &Server{d: d, opts: opts, log: opts.Log, ctx: ctx, cancel: cancel,
		cfg:   &thrift.TConfiguration{MaxMessageSize: limit, MaxFrameSize: limit},
		reads: newRegistry(d, opts.RequestTimeout, opts.Log)}
	s.tcp = tcpserver.New(s.serveConn, s.log)
	return s
}

// Serve accepts connections until Close; it returns nil after Close.
func (s *Server) Serve(ln net.Listener) error { return s.tcp.Serve(ln) }

// Close stops accepting, ends waiting gets, closes every connection and
// waits for them, then gives every open read back to its queue.
func (s *Server) Close() {
	s.cancel()
	s.tcp.Close()
	s.reads.close()
}

// Connections is how many clients are connected now.
func (s *Server) Connections() int { return s.tcp.Connections() }

// Refuse is what a client over the connection limit is told before it is
// closed: nothing, since a Thrift client reads an answer only to a call it
// made, and a closed connection is what its pool retries.
func (s *Server) Refuse(net.Conn) {}

func (s *Server) serveConn(nc net.Conn) { newConn(s, nc).serve() }
