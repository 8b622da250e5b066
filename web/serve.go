package web

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
)

// Serve answers HTTP on ln until Close; it returns nil after Close.
func (s *Server) Serve(ln net.Listener) error {
	if s.opts.TLS != nil {
		ln = tls.NewListener(ln, s.opts.TLS)
	}
	if err := s.http.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Close stops accepting and lets the requests in flight finish within the
// shutdown timeout; then the long polls still waiting are ended.
func (s *Server) Close() {
	s.endStreams()
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.ShutdownTimeout)
	defer cancel()
	stop := context.AfterFunc(ctx, s.endWaits) // grace is over: end the long polls still waiting
	defer stop()
	if err := s.http.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		s.log.Warn("http shutdown", "err", err)
	}
	s.endWaits()
}

// Connections is how many HTTP connections are open now.
func (s *Server) Connections() int { return int(s.conns.Load()) }

func (s *Server) countConn(_ net.Conn, state http.ConnState) {
	switch state {
	case http.StateNew:
		s.conns.Add(1)
	case http.StateClosed, http.StateHijacked:
		s.conns.Add(-1)
	}
}

// Refuse tells a client over the connection limit why it is closed, as a 503.
func (s *Server) Refuse(c net.Conn) { _, _ = c.Write(refusal) }

var refusal = []byte("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n" +
	`{"error":"too many connections ([server] max_connections)"}` + "\n")
