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
	"log/slog"
	"math"
	"net"
	"sync/atomic"
	"time"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/gmq/gmq/dispatcher"
	"github.com/gmq/gmq/internal/tcpserver"
)

// Options configure the protocol server.
type Options struct {
	tcpserver.Options
	Version     string // answered to get_version
	MaxItemSize int    // bytes: a put stops at a larger item, which it does not put
	// MaxRequest bounds a frame's bytes: a larger one is refused with an
	// exception and the connection closed.
	MaxRequest int
	// MaxOpenReads is how many reads a connection may hold open on a
	// queue (kestrel's max_open_reads; less than 1: 1, kestrel's default).
	MaxOpenReads int
	// DefaultTTR is the TTR of the jobs put here: how long an open read
	// holds its job if the server stops touching it.
	DefaultTTR time.Duration
}

// Server serves kestrel's Thrift protocol. Serve it on a listener; Close it once.
type Server struct {
	d                *dispatcher.Dispatcher
	opts             Options
	log              *slog.Logger
	cfg              *thrift.TConfiguration // bounds what a frame's message may claim
	*tcpserver.Front                        // Serve, Connections, Refuse; its Context ends the connections' waits
	reads            *registry              // the open reads, every connection's
	conns            atomic.Uint64          // numbers the connections (a read's owner)
}

// New returns a protocol server over d. Every option must be set (the
// defaults are config.Default's kestrel ones) but Observe; Log may be nil.
func New(d *dispatcher.Dispatcher, opts Options) *Server {
	opts.MaxOpenReads = max(opts.MaxOpenReads, 1)
	limit := int32(min(opts.MaxRequest, math.MaxInt32))
	log := opts.Logger()
	s := &Server{d: d, opts: opts, log: log,
		cfg:   &thrift.TConfiguration{MaxMessageSize: limit, MaxFrameSize: limit},
		reads: newRegistry(d, opts.RequestTimeout, log)}
	// A client over the connection limit is told nothing: a Thrift client
	// reads an answer only to a call it made, and a closed connection is
	// what its pool retries.
	s.Front = tcpserver.NewFront(s.serveConn, s.log, "")
	return s
}

// Close stops accepting, ends waiting gets, closes every connection and
// waits for them, then gives every open read back to its queue.
func (s *Server) Close() {
	s.Front.Close()
	s.reads.close()
}

func (s *Server) serveConn(nc net.Conn) { newConn(s, nc).serve() }
