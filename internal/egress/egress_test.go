package egress

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestCheckURL(t *testing.T) {
	p, err := Parse([]string{"hooks.example.com", "*.internal.example", "10.1.2.3", "192.168.0.0/16", "[::1]",
		"api.example.org:8443", "127.0.0.1:8080", "[::2]:9000", "*.svc.example:443"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"https://hooks.example.com/x", true},
		{"https://HOOKS.example.com:8443/x", true},
		{"https://evil.hooks.example.com/x", false},
		{"https://a.internal.example/x", true},
		{"https://a.b.internal.example/x", true},
		{"https://internal.example/x", false},
		{"http://10.1.2.3:9000/", true},
		{"http://10.1.2.4/", false},
		{"http://192.168.7.7/", true},
		{"http://[::1]:8080/", true},
		{"http://127.0.0.1/", false},
		{"http://localhost/", false},
		{"http://example.com/", false},
		{"https://api.example.org:8443/x", true},
		{"https://api.example.org/x", false}, // 443, not the port listed
		{"http://127.0.0.1:8080/", true},
		{"http://127.0.0.1:6379/", false}, // Redis, on the address listed for another port
		{"http://[::2]:9000/", true},
		{"http://[::2]:9001/", false},
		{"https://a.svc.example/", true},
		{"http://a.svc.example/", false},
	} {
		err := p.CheckURL(tc.url)
		if (err == nil) != tc.ok {
			t.Errorf("CheckURL(%q) = %v, want allowed %v", tc.url, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "allow_hosts") {
			t.Errorf("CheckURL(%q) = %q: does not say what to change", tc.url, err)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	for _, bad := range []string{"10.0.0.0/33", "*.", "exa mple.com", "http://x", "*.a b", "host:0", "host:99999", "host:http"} {
		if _, err := Parse([]string{bad}); err == nil {
			t.Errorf("Parse(%q) took it", bad)
		}
	}
	p, err := Parse([]string{" ", ""})
	if err != nil || !p.Off() {
		t.Fatalf("blank entries: %v, off %v", err, p.Off())
	}
	if err := p.CheckURL("http://example.com/"); err == nil || !strings.Contains(err.Error(), "off") {
		t.Fatalf("an empty policy: %v", err)
	}
}

func TestAllowsAddr(t *testing.T) {
	p, err := Parse([]string{"hooks.example.com", "10.9.0.0/16"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		addr string
		ok   bool
	}{
		{"93.184.216.34", true},                         // public
		{"2606:2800:220:1::", true},                     // public
		{"127.0.0.1", false},                            // loopback
		{"::1", false},                                  // loopback
		{"::ffff:127.0.0.1", false},                     // loopback, mapped
		{"169.254.169.254", false},                      // the clouds' metadata
		{"fd00:ec2::254", false},                        // AWS's, over IPv6
		{"10.0.0.1", false},                             // private
		{"10.9.1.1", true},                              // private, listed
		{"172.16.0.1", false},                           // private
		{"100.64.0.1", false},                           // shared
		{"0.0.0.0", false},                              // unspecified
		{"224.0.0.1", false},                            // multicast
		{"255.255.255.255", false},                      // broadcast
		{"64:ff9b::7f00:1", false},                      // NAT64 of 127.0.0.1
		{"fe80::1", false},                              // link local
		{"2001:db8::1", false},                          // documentation
		{"192.168.1.1", false},                          // private
		{"8.8.8.8", true},                               // public
		{"::ffff:8.8.8.8", true},                        // public, mapped
		{"198.51.100.1", true},                          // TEST-NET-2: not special to netip; harmless
		{"2001:4860:4860::8888", true},                  // public
		{"fc00::1", false},                              // unique local
		{"ff02::1", false},                              // multicast
		{"100.127.255.255", false},                      // shared, its end
		{"100.128.0.0", true},                           // past it
		{"10.9.255.255", true},                          // listed network's end
		{"10.10.0.0", false},                            // past it
		{"169.254.0.1", false},                          // link local
		{"192.0.0.8", false},                            // IETF protocol assignments
		{"198.18.0.1", false},                           // benchmarking
		{"240.0.0.1", false},                            // reserved
		{"2001:4860:4860::8844", true},                  // public
		{"64:ff9b::808:808", false},                     // NAT64, even of a public one: it could be any
		{"::", false},                                   // unspecified
		{"::ffff:169.254.169.254", false},               // metadata, mapped
		{"::ffff:10.9.0.1", true},                       // listed, mapped
		{"2a00:1450:4001:81c::200e", true},              // public
		{"100.64.0.0", false},                           // shared, its start
		{"1.1.1.1", true},                               // public
		{"127.255.255.254", false},                      // loopback's end
		{"0.255.255.255", false},                        // "this network"
		{"203.0.113.9", true},                           // TEST-NET-3: not special to netip
		{"172.31.255.255", false},                       // private's end
		{"172.32.0.0", true},                            // past it
		{"192.169.0.0", true},                           // past 192.168/16
		{"11.0.0.0", true},                              // past 10/8
		{"9.255.255.255", true},                         // before 10/8
		{"fe80::1%eth0", false},                         // zoned link local
		{"ff05::2", false},                              // site-local multicast
		{"2002:7f00:1::", false},                        // 6to4 of 127.0.0.1
		{"::7f00:1", false},                             // IPv4-compatible 127.0.0.1
		{"::a9fe:a9fe", false},                          // IPv4-compatible metadata
		{"::ffff:0:7f00:1", false},                      // IPv4-translated 127.0.0.1
		{"64:ff9b:1::1", false},                         // local NAT64
		{"fec0::1", false},                              // site local
		{"100::1", false},                               // discard only
		{"192.88.99.1", false},                          // 6to4 relay
		{"2001:10::1", false},                           // ORCHID
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", false}, // Teredo
	} {
		a, err := netip.ParseAddr(tc.addr)
		if err != nil {
			t.Fatalf("%s: %v", tc.addr, err)
		}
		if got := p.AllowsAddr(netip.AddrPortFrom(a, 443)); got != tc.ok {
			t.Errorf("AllowsAddr(%s) = %v, want %v", tc.addr, got, tc.ok)
		}
	}
}

// TestDialRefusesRebinding dials through the policy's dialer: a name
// allowed by allow_hosts that resolves to loopback is refused at the dial,
// while the loopback address listed itself is let through.
func TestDialRefusesRebinding(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	get := func(p *Policy, url string) error {
		if err := p.CheckURL(url); err != nil {
			return err
		}
		tr := &http.Transport{DialContext: p.Dialer().DialContext}
		defer tr.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	byName, _ := Parse([]string{"localhost"})
	err := get(byName, "http://localhost:"+port+"/")
	var refused *RefusedError
	if !errors.As(err, &refused) {
		t.Fatalf("localhost (listed by name) resolving to loopback: %v, want a RefusedError", err)
	}
	byAddr, _ := Parse([]string{"127.0.0.1"})
	if err := get(byAddr, "http://127.0.0.1:"+port+"/"); err != nil {
		t.Fatalf("127.0.0.1 listed: %v", err)
	}
}
