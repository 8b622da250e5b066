package egress

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// listener is a real HTTP server on one loopback address, counting the
// requests that reached it.
type listener struct {
	port string
	hits atomic.Int64
}

func listen(t *testing.T, network, addr string) *listener {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatalf("listen on %s: %v", addr, err)
	}
	l := &listener{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		l.hits.Add(1)
		w.WriteHeader(204)
	}))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	_, l.port, _ = net.SplitHostPort(ln.Addr().String())
	return l
}

// TestDialObeysPorts: an address listed with a port lets the broker
// connect to that port only, whether the URL names the address or a
// listed name that resolves to it; one listed without a port allows every
// port. Each row dials real listeners: "open", whose port the list names,
// and "other", another port on the same address, which a refused request
// must never reach. "localhost" resolves to 127.0.0.1 in /etc/hosts here.
func TestDialObeysPorts(t *testing.T) {
	v4 := map[string]*listener{"open": listen(t, "tcp4", "127.0.0.1:0"), "other": listen(t, "tcp4", "127.0.0.1:0")}
	v6 := map[string]*listener{"open": listen(t, "tcp6", "[::1]:0"), "other": listen(t, "tcp6", "[::1]:0")}
	for _, tc := range []struct {
		name  string
		allow []string // "OPEN" stands for the open listener's port
		url   string   // "PORT" stands for the port of target's listener
		ls    map[string]*listener
		dial  string // the listener dialled: "open" or "other"
		want  string // "" reached; "url" refused by CheckURL; "dial" refused at connect
	}{
		// The scenario: a name listed without a port passes the
		// URL check on any port, and resolves to an address listed on
		// another port.
		{"name to address on another port", []string{"127.0.0.1:OPEN", "localhost"}, "http://localhost:PORT/", v4, "other", "dial"},
		{"name to address on its port", []string{"127.0.0.1:OPEN", "localhost"}, "http://localhost:PORT/", v4, "open", ""},
		{"name with the port to address on it", []string{"127.0.0.1:OPEN", "localhost:OPEN"}, "http://localhost:PORT/", v4, "open", ""},
		{"name with a port, address not listed", []string{"localhost:OPEN"}, "http://localhost:PORT/", v4, "open", "dial"},
		{"name with a port, another port", []string{"127.0.0.1", "localhost:OPEN"}, "http://localhost:PORT/", v4, "other", "url"},
		{"address with a port, another port", []string{"127.0.0.1:OPEN"}, "http://127.0.0.1:PORT/", v4, "other", "url"},
		{"address with a port, its port", []string{"127.0.0.1:OPEN"}, "http://127.0.0.1:PORT/", v4, "open", ""},
		{"address without a port", []string{"127.0.0.1", "localhost"}, "http://localhost:PORT/", v4, "other", ""},
		{"network", []string{"127.0.0.0/8", "localhost"}, "http://localhost:PORT/", v4, "other", ""},
		{"mapped address with a port", []string{"[::ffff:127.0.0.1]:OPEN", "localhost"}, "http://localhost:PORT/", v4, "other", "dial"},
		{"IPv6 with a port, another port", []string{"[::1]:OPEN"}, "http://[::1]:PORT/", v6, "other", "url"},
		{"IPv6 with a port, its port", []string{"[::1]:OPEN"}, "http://[::1]:PORT/", v6, "open", ""},
		{"IPv6 without a port", []string{"::1"}, "http://[::1]:PORT/", v6, "other", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			open := tc.ls["open"].port
			var allow []string
			for _, e := range tc.allow {
				allow = append(allow, strings.ReplaceAll(e, "OPEN", open))
			}
			p, err := Parse(allow)
			if err != nil {
				t.Fatal(err)
			}
			target := tc.ls[tc.dial]
			url := strings.ReplaceAll(tc.url, "PORT", target.port)
			before := target.hits.Load()
			err = p.CheckURL(url)
			switch {
			case tc.want == "url" && err == nil:
				t.Fatalf("CheckURL(%s) with %v: allowed", url, allow)
			case tc.want == "url":
				// An address refused in a URL is refused at connect too
				// (a name may resolve to one that is listed on any port).
				hostPort := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/")
				if _, perr := netip.ParseAddrPort(hostPort); perr == nil {
					if err := p.Control("tcp", hostPort, nil); !errors.As(err, new(*RefusedError)) {
						t.Fatalf("connect to %s with %v: %v, want refused there too", hostPort, allow, err)
					}
				}
				return
			case err != nil:
				t.Fatalf("CheckURL(%s) with %v: %v", url, allow, err)
			}
			err = get(p, url)
			if tc.want == "dial" {
				if !errors.As(err, new(*RefusedError)) {
					t.Fatalf("GET %s with %v: %v, want a RefusedError", url, allow, err)
				}
			} else if err != nil {
				t.Fatalf("GET %s with %v: %v", url, allow, err)
			}
			if got, want := target.hits.Load()-before, map[bool]int64{true: 0, false: 1}[tc.want == "dial"]; got != want {
				t.Fatalf("GET %s with %v reached the listener %d times, want %d", url, allow, got, want)
			}
		})
	}
}

// get is a GET through the policy's dialer, its answer read.
func get(p *Policy, url string) error {
	tr := &http.Transport{DialContext: p.Dialer().DialContext}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}
