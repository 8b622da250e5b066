// Package beanstalk speaks beanstalkd's wire protocol (as of 1.12) over the
// dispatcher, so existing beanstalkd clients work with gmq unchanged, and a
// job put here can be popped over HTTP and the other way round. It owns the
// connections: the tube each uses and watches, the jobs each has reserved, and
// the per-server command counters; the jobs themselves live in the store.
package beanstalk

import (
	"context"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/gmq/gmq/dispatcher"
	"github.com/gmq/gmq/internal/tcpserver"
)

// Options configure the protocol server.
type Options struct {
	tcpserver.Options
	MaxJobSize int // bytes; beanstalkd's default is 65535
}

// Server serves beanstalkd's protocol. Serve it on a listener; Close it once.
type Server struct {
	d        *dispatcher.Dispatcher
	opts     Options
	log      *slog.Logger
	started  time.Time
	instance string

	*tcpserver.Front // Serve, Close, Connections, Refuse

	mu         sync.Mutex
	conns      map[*conn]struct{}
	tubes      map[string]*tubeRefs // tubes used, watched or waited on by connections here
	totalConns int64
	counters   map[string]int64 // cmd-* counters
	waiting    int              // connections waiting in a reserve
}

// tubeRefs counts a tube's references from this server's connections.
type tubeRefs struct{ using, watching, waiting int }

// New returns a protocol server over d. Every option must be set (the
// defaults are config.Default's); Log may be nil.
func New(d *dispatcher.Dispatcher, opts Options) *Server {
	s := &Server{d: d, opts: opts, log: opts.Logger(), started: time.Now(), instance: newInstanceID(),
		conns: map[*conn]struct{}{}, tubes: map[string]*tubeRefs{}, counters: map[string]int64{}}
	// A client over the connection limit is told so in beanstalkd's words
	// for a server out of resources. Close closes every connection, whose
	// reserved jobs go back to ready.
	s.Front = tcpserver.NewFront(s.serveConn, s.log, "OUT_OF_MEMORY\r\n")
	return s
}

// serveConn runs one client connection.
func (s *Server) serveConn(nc net.Conn) {
	// No Nagle: Go sets TCP_NODELAY on every TCP connection it accepts, so
	// clients that write a command and its body separately do not stall.
	c := newConn(s, nc)
	s.mu.Lock()
	s.conns[c] = struct{}{}
	s.totalConns++
	s.ref("default", func(r *tubeRefs) { r.using++; r.watching++ })
	s.mu.Unlock()
	c.serve()
}

// ref changes a tube's reference counts, under s.mu, forgetting it at zero.
func (s *Server) ref(tube string, change func(*tubeRefs)) {
	r := s.tubes[tube]
	if r == nil {
		r = &tubeRefs{}
		s.tubes[tube] = r
	}
	change(r)
	if *r == (tubeRefs{}) {
		delete(s.tubes, tube)
	}
}

func (s *Server) refs(tube string) (tubeRefs, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.tubes[tube]
	if !ok {
		return tubeRefs{}, false
	}
	return *r, true
}

func (s *Server) count(stat string) {
	if stat == "" {
		return
	}
	s.mu.Lock()
	s.counters[stat]++
	s.mu.Unlock()
}

func (s *Server) closeConn(c *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.conns, c)
	s.ref(c.use, func(r *tubeRefs) { r.using-- })
	for _, t := range c.watch {
		s.ref(t, func(r *tubeRefs) { r.watching-- })
	}
}

// ctx bounds the store calls of one command by the request timeout.
func (s *Server) ctx(parent context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(parent, s.opts.RequestTimeout)
}
