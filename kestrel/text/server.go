// Package text speaks Twitter kestrel's text protocol over the
// dispatcher: kestrel's line protocol beside memcache (kestrel's
// docs/text_protocol.md), so that its clients work with gmq, and an item
// put here can be popped over HTTP, beanstalkd's or memcache's protocol and
// the other way round. It owns the connections; each one's open reads are
// an openreads.Reads, as memcache's are; the items are jobs in the store.
//
// Lines end in LF (a CR before it is stripped); answers end in LF:
// "+<count>" a success, "-<message>" a failure, ":<item>" an item and "*"
// none. What it maps, and how:
//   - put <q> [expiration_ms]: then one item a line up to an empty line
//     pushes each item as a job with [jobs] default_ttr, so that a read can
//     hold it, expiring that many milliseconds from now (0 or less: at
//     once, as kestrel), and answers how many were put. An item over
//     MaxItemSize, or with no room (its queue full, Redis at maxmemory), is
//     not counted, as kestrel counts only what its queue took; nor is an
//     item past the 1,024th, kestrel's most, which is read and dropped.
//   - get <q> [timeout_ms] first confirms (acks) every read the connection
//     holds open on q (kestrel's closeAllReads: a get confirms the one
//     before), then reserves the next item as an open read, touched while
//     the connection lives and given back to the head of its queue when it
//     ends. peek <q> [timeout_ms] confirms them too, then looks; monitor
//     <q> <timeout_ms> confirms them, then streams up to max_open_reads
//     items as open reads; confirm <q> <n> acks the n oldest.
//   - An item holding a line feed (pushed over another protocol) cannot be
//     carried: a get or monitor gives it back at once (a job whose TTR is 0,
//     removed as it was popped, is pushed again: at the tail of its queue,
//     its client id kept) and answers "-item <id> holds a line feed: read
//     <q> over another protocol"; a peek answers the same. Every other byte
//     round-trips exactly (kestrel itself re-encodes bytes past 0x7f).
//
// Where gmq departs from kestrel: a put line without its ':' is refused and
// the connection closed, since kestrel would run the items that follow as
// commands; a put whose lines run past MaxRequest is refused and the
// connection closed; items past the 1,024th are dropped up to the empty
// line rather than read as commands; monitor takes what is ready even when
// its time is up; bad numbers are answered, not left to close the
// connection.
package text

import (
	"log/slog"
	"net"
	"time"

	"github.com/gmq/gmq/dispatcher"
	"github.com/gmq/gmq/internal/tcpserver"
	"github.com/gmq/gmq/kestrel/openreads"
)

// Options configure the protocol server.
type Options struct {
	tcpserver.Options
	Version     string // answered to version
	MaxItemSize int    // bytes: a larger item of a put is not put (nor counted)
	// MaxRequest bounds a put's bytes, its lines and their line ends: a
	// longer put is refused and the connection closed.
	MaxRequest int
	// MaxOpenReads is how many reads a monitor opens at most (kestrel's
	// max_open_reads).
	MaxOpenReads int
	// DefaultTTR is the TTR of the jobs put here: how long an open read
	// holds its job without the connection's touches.
	DefaultTTR time.Duration
	// Shutdown stops the broker (kestrel's shutdown); nil refuses it.
	Shutdown func()
}

// Server serves kestrel's text protocol. Serve it on a listener; Close it once.
type Server struct {
	d                *dispatcher.Dispatcher
	opts             Options
	log              *slog.Logger
	*tcpserver.Front // Serve, Close, Connections, Refuse; its Context ends the connections' waits
}

// New returns a protocol server over d. Every option must be set (the
// defaults are config.Default's kestrel ones); Log may be nil.
func New(d *dispatcher.Dispatcher, opts Options) *Server {
	s := &Server{d: d, opts: opts, log: opts.Logger()}
	// tcpserver closes a connection whose first line is HTTP's, unread
	// (httpguard.go): a line of this protocol that looks like one ("GET /q
	// HTTP/1.1") would be refused anyway, its timeout not a number. Close
	// ends waiting gets, then closes every connection, whose open reads go
	// back to their queues.
	s.Front = tcpserver.NewFront(s.serveConn, s.log, "-Too many connections ([server] max_connections).\n")
	return s
}

func (s *Server) serveConn(nc net.Conn) { newConn(s, nc).serve() }

// conn is one text-protocol client connection, its requests run in order
// as they are framed (openreads.Serve), with the transactions its gets and
// monitors hold open until it confirms them, aborts them or ends.
type conn struct {
	openreads.Conn
	s *Server
}

func newConn(s *Server, nc net.Conn) *conn {
	opts := openreads.Options{Dispatcher: s.d, RequestTimeout: s.opts.RequestTimeout, Log: s.log, Name: "kestrel text"}
	return &conn{Conn: openreads.NewConn(s.Front, nc, opts), s: s}
}
