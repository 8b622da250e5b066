// Package memcache speaks Twitter kestrel's memcache protocol over the
// dispatcher, so that kestrel's clients (any memcache client: SET to push,
// GET to pop) work with gmq, and an item set here can be popped over HTTP or
// beanstalkd's protocol and the other way round. It owns the connections and
// each one's open (reliable) reads; the items are jobs in the store.
//
// What it maps, and how (see docs/protocols.md, kestrel's memcache protocol):
//   - set <q> <flags> 0 <bytes> pushes a job with [jobs] default_ttr, so that
//     a reliable read can hold it; a plain get takes it (removed as it is
//     popped, in one script).
//   - get <q>[/t=ms][/open][/close][/abort][/peek]: /open reserves the job for
//     the connection, which keeps touching it until /close (ack), /abort or
//     the connection's end (back to ready, at the head of its queue). A
//     broker that dies with it open loses the touches: the job's TTR runs
//     out and it is delivered again.
package memcache

import (
	"context"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gmq/gmq/dispatcher"
	"github.com/gmq/gmq/internal/tcpserver"
)

// Options configure the protocol server.
type Options struct {
	tcpserver.Options
	Version     string
	MaxItemSize int // bytes: a larger set is NOT_STORED
	// MaxRequest bounds a set's byte count: a larger one is not read, and the
	// connection is closed.
	MaxRequest int
	// StatsQueues is how many queues, the first by name, stats and
	// dump_stats list ([metrics] max_topics): each is a read of Redis.
	StatsQueues int
	// MaxOpenReads is how many reads a connection may hold open on one queue
	// (kestrel's max_open_reads).
	MaxOpenReads int
	// DefaultTTR is the TTR of the jobs set here: how long an open read holds
	// its job without the connection's touches.
	DefaultTTR time.Duration
	// Reload reads the configuration again (kestrel's reload); nil refuses it.
	Reload func(context.Context) error
	// Shutdown stops the broker (kestrel's shutdown); nil refuses it.
	Shutdown func()
}

// Server serves kestrel's memcache protocol. Serve it on a listener; Close it once.
type Server struct {
	d                *dispatcher.Dispatcher
	opts             Options
	log              *slog.Logger
	started          time.Time
	*tcpserver.Front // Serve, Close, Connections, Refuse; its Context ends the connections' waits

	mu       sync.Mutex
	counters map[string]int64 // cmd_get, get_hits… (kestrel's stats names)

	bytesRead, bytesWritten atomic.Int64
}

// New returns a protocol server over d. Every option must be set (the
// defaults are config.Default's); Log may be nil.
func New(d *dispatcher.Dispatcher, opts Options) *Server {
	s := &Server{d: d, opts: opts, log: opts.Logger(), started: time.Now(), counters: map[string]int64{}}
	// Close ends waiting gets, then closes every connection, whose open
	// reads go back to their queues.
	s.Front = tcpserver.NewFront(s.serveConn, s.log, "SERVER_ERROR too many connections ([server] max_connections)\r\n")
	return s
}

func (s *Server) serveConn(nc net.Conn) {
	s.count("total_connections")
	newConn(s, &countingConn{Conn: nc, s: s}).serve()
}

// countingConn counts the bytes a client sent and was sent (kestrel's
// bytes_read and bytes_written).
type countingConn struct {
	net.Conn
	s *Server
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.s.bytesRead.Add(int64(n))
	return n, err
}

func (c *countingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.s.bytesWritten.Add(int64(n))
	return n, err
}

func (s *Server) count(stat string) {
	s.mu.Lock()
	s.counters[stat]++
	s.mu.Unlock()
}

func (s *Server) counter(stat string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counters[stat]
}
