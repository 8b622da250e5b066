// Package cutproxy is a reverse proxy to a broker for the clients' tests of
// their events iterators: Cut (or a POST to its /-/cut) closes every
// connection in flight through it, as a network that drops would, so that
// an iterator must connect again and resume from its last event.
package cutproxy

import (
	"context"
	"encoding/json"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"
)

// Proxy is a proxy running for a test.
type Proxy struct {
	URL string // its base URL, standing for the broker's

	rp      *httputil.ReverseProxy
	mu      sync.Mutex
	live    map[*request]bool
	lastIDs []string // each events request's Last-Event-ID header
}

// request is one request in flight: its cancel, and done once its handler
// has returned (the connection is then closed, or answered).
type request struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// Start runs a proxy to the broker at target (its base URL) until the test
// ends.
func Start(t testing.TB, target string) *Proxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{live: map[*request]bool{}, rp: httputil.NewSingleHostReverseProxy(u)}
	p.rp.FlushInterval = -1 // each event as it comes
	p.rp.ErrorLog = log.New(testWriter{t}, "cutproxy: ", 0)
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// ServeHTTP proxies r, cancellable by Cut; /-/cut cuts the others.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/-/cut" {
		w.Header().Set("Content-Type", "application/json")
		if err := json.NewEncoder(w).Encode(map[string]int{"cut": p.Cut()}); err != nil {
			p.rp.ErrorLog.Printf("answering /-/cut: %v", err)
		}
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	req := &request{cancel: cancel, done: make(chan struct{})}
	p.mu.Lock()
	p.live[req] = true
	if r.URL.Path == "/api/v1/events" {
		p.lastIDs = append(p.lastIDs, r.Header.Get("Last-Event-ID"))
	}
	p.mu.Unlock()
	defer func() { // runs as ReverseProxy's abort panics through, too
		p.mu.Lock()
		delete(p.live, req)
		p.mu.Unlock()
		cancel()
		close(req.done)
	}()
	p.rp.ServeHTTP(w, r.WithContext(ctx))
}

// Cut closes every connection in flight and returns how many there were,
// once their handlers have returned (within 5 s): nothing the broker sends
// after Cut reaches their clients.
func (p *Proxy) Cut() int {
	p.mu.Lock()
	cut := make([]*request, 0, len(p.live))
	for req := range p.live {
		cut = append(cut, req)
	}
	p.mu.Unlock()
	for _, req := range cut {
		req.cancel()
	}
	deadline := time.After(5 * time.Second)
	for _, req := range cut {
		select {
		case <-req.done:
		case <-deadline:
			return len(cut)
		}
	}
	return len(cut)
}

// LastEventIDs are the Last-Event-ID headers of the events requests so far,
// in order ("" for none).
func (p *Proxy) LastEventIDs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.lastIDs)
}

// testWriter routes the proxy's log to the test's.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(string(b))
	return len(b), nil
}
