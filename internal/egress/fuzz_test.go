package egress

import (
	"net/netip"
	"net/url"
	"strings"
	"testing"
)

// FuzzCheckURL: no URL makes the policy panic, and one it allows has a
// host the list names: an address of a network listed, or a name listed
// or under a listed suffix.
func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{"http://127.0.0.1:8080/", "https://hooks.example.com/x", "http://[::1]:9000/", "http://2130706433/",
		"http://a.svc.example/", "http://user@127.0.0.1/", "http://127.0.0.1%2f@evil/", "http://[::ffff:127.0.0.1]/", "http:\\\\evil"} {
		f.Add(s)
	}
	p, err := Parse([]string{"127.0.0.1:8080", "hooks.example.com", "*.svc.example", "10.0.0.0/8"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if p.CheckURL(raw) != nil {
			return
		}
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatalf("%q allowed but does not parse: %v", raw, err)
		}
		host := strings.ToLower(u.Hostname())
		if a, err := netip.ParseAddr(host); err == nil {
			if a = a.Unmap(); a != netip.MustParseAddr("127.0.0.1") && !netip.MustParsePrefix("10.0.0.0/8").Contains(a) {
				t.Fatalf("%q allowed: address %s is not listed", raw, a)
			}
			return
		}
		if host != "hooks.example.com" && !strings.HasSuffix(host, ".svc.example") {
			t.Fatalf("%q allowed: host %q is not listed", raw, host)
		}
	})
}
