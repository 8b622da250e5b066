package metrics

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/gmq/gmq/internal/hostname"
)

// Server serves /metrics alone, on a listener of its own ([metrics] addr),
// without the API's token: for a scraper on a network that must not reach
// the API. It is one of the broker's front ends.
type Server struct {
	http  *http.Server
	conns atomic.Int64
}

// NewServer returns the metrics' own HTTP server. When it listens on
// loopback only, it answers only to loopback host names and allowedHosts,
// as the API does (package hostname): a page on a DNS name rebound to
// 127.0.0.1 cannot read it.
func (m *Metrics) NewServer(loopback bool, allowedHosts []string) *Server {
	s := &Server{}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	var handler http.Handler = mux
	if loopback {
		handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !hostname.Local(r.Host, allowedHosts) {
				http.Error(w, "this metrics listener is on loopback and answers only to loopback host names, not "+
					strconv.Quote(r.Host)+" (add it to [web] allowed_hosts)", http.StatusMisdirectedRequest)
				return
			}
			mux.ServeHTTP(w, r)
		})
	}
	s.http = &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		IdleTimeout: time.Minute, ConnState: func(_ net.Conn, st http.ConnState) {
			switch st {
			case http.StateNew:
				s.conns.Add(1)
			case http.StateClosed, http.StateHijacked:
				s.conns.Add(-1)
			}
		}}
	return s
}

// Serve serves on ln until Close; it returns nil after Close.
func (s *Server) Serve(ln net.Listener) error {
	if err := s.http.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Close stops the server, letting a scrape in flight finish for a second.
func (s *Server) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = s.http.Shutdown(ctx)
}

// Connections is how many scrapers are connected now.
func (s *Server) Connections() int { return int(s.conns.Load()) }

// Refuse answers a connection over [server] max_connections.
func (s *Server) Refuse(c net.Conn) {
	_, _ = c.Write([]byte("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"))
}
