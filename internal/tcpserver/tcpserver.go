// Package tcpserver is what gmq's five TCP front ends (beanstalkd's
// protocol, JSON-RPC, kestrel's memcache, text and thrift protocols) share:
// the options they are given alike (Options), the accept loop with a
// goroutine per connection, each closed and waited for on Close, and the
// context that ends their waits (Front); and, for the line protocols, the
// request pipeline (Pipeline).
package tcpserver

import (
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"
)

// Server serves connections with a handler. Serve it once; Close it once.
type Server struct {
	handle    func(net.Conn)
	log       *slog.Logger
	httpBurst *Burst // HTTP requests refused (httpguard.go)

	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// New returns a server that runs handle for each connection whose first
// line is not HTTP (httpguard.go); the connection is closed when handle
// returns. log (nil: none) gets a line per burst of
// failed accepts.
func New(handle func(net.Conn), log *slog.Logger) *Server {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Server{handle: handle, log: log, conns: map[net.Conn]struct{}{},
		httpBurst: &Burst{Log: log, Every: 10 * time.Second,
			Msg: "closed a connection that spoke HTTP to a non-HTTP port (a web page in a browser can send such requests)"}}
}

// Serve accepts connections until Close; it returns nil after Close. Accept
// errors that pass (out of file descriptors) are waited out, not fatal: a
// flood of connections must not stop the broker.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ln.Close()
	}
	s.ln = ln
	s.mu.Unlock()
	retry := newAcceptRetry(s.log, ln.Addr().String())
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.isClosed() {
				return nil
			}
			if retry.wait(err) {
				continue
			}
			return fmt.Errorf("accept: %w", err)
		}
		retry.accepted()
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			nc.Close()
			continue
		}
		s.conns[nc] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serve(nc)
	}
}

func (s *Server) serve(nc net.Conn) {
	defer s.wg.Done()
	defer func() {
		nc.Close()
		s.mu.Lock()
		delete(s.conns, nc)
		s.mu.Unlock()
	}()
	served, refused := s.refuseHTTP(nc)
	if refused {
		return
	}
	s.handle(served)
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Connections is how many connections are open now.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// Close stops accepting, closes every connection and waits for the handlers.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	if s.ln != nil {
		s.ln.Close()
	}
	for nc := range s.conns {
		nc.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}
