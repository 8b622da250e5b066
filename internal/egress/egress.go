// Package egress decides which hosts the broker itself may call: conf.ini's
// [webhook] allow_hosts, for HTTP push delivery. A topic's deliver_to is
// set over the API, so without this a client could make the broker call
// anything it reaches: its own Redis, a cloud's metadata address, a service
// behind the firewall. The policy is checked twice: on the URL's host when
// the setting is made (a clear error then), and on the address actually
// dialled (Control), so that a name that passed cannot be made to resolve
// to a loopback, private or metadata address later (DNS rebinding) unless
// that address is listed itself.
package egress

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
)

// Policy is the hosts that may be called. The zero Policy (and Parse of
// an empty list) allows none: delivery is off.
type Policy struct {
	names    map[string]bool // exact host names, lower case, each maybe with ":port"
	suffixes []suffix        // "*.example.com" as ".example.com"
	nets     []network       // addresses and networks listed
	entries  []string        // as written, for messages
}

// suffix is a name's subdomains, on one port or any ("").
type suffix struct{ dot, port string }

// network is an address or network listed, on one port or any ("").
type network struct {
	prefix netip.Prefix
	port   string
}

// Parse reads allow_hosts' entries: a host name ("hooks.example.com"), a
// name's subdomains ("*.example.com"), an address ("10.0.0.7", "::1") or a
// network ("10.0.0.0/8"); a name, subdomains or an address may name one
// port ("hooks.example.com:443", "127.0.0.1:8080", "[::1]:8080"), and
// without one allow every port.
func Parse(entries []string) (*Policy, error) {
	p := &Policy{names: map[string]bool{}}
	for _, e := range entries {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		p.entries = append(p.entries, e)
		host, port := splitPort(e)
		switch {
		case strings.Contains(e, "/"):
			n, err := netip.ParsePrefix(e)
			if err != nil {
				return nil, fmt.Errorf("allow_hosts: %q is not a network (10.0.0.0/8): %v", e, err)
			}
			p.nets = append(p.nets, network{prefix: n.Masked()})
		case strings.HasPrefix(host, "*."):
			if !validName(host[2:]) {
				return nil, fmt.Errorf("allow_hosts: %q is not *. and a host name", e)
			}
			p.suffixes = append(p.suffixes, suffix{dot: strings.ToLower(host[1:]), port: port})
		default:
			if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
				p.nets = append(p.nets, network{prefix: netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()), port: port})
				continue
			}
			if !validName(host) {
				return nil, fmt.Errorf("allow_hosts: %q is not a host name, an address or a network", e)
			}
			p.names[strings.ToLower(host)+":"+port] = true
		}
	}
	return p, nil
}

// splitPort splits "host:port" ("[::1]:8080"); an entry without a port (a
// bare IPv6 address among them) is all host, and port "".
func splitPort(e string) (host, port string) {
	if h, p, err := net.SplitHostPort(e); err == nil && p != "" && isPort(p) {
		return h, p
	}
	return e, ""
}

func isPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n > 0 && n < 65536 && strconv.Itoa(n) == p
}

// validName is a DNS name: labels of letters, digits, '-' and '_'.
func validName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(strings.TrimSuffix(s, "."), ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, r := range label {
			if !(r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
				return false
			}
		}
	}
	return true
}

// Off says no host may be called: allow_hosts is empty.
func (p *Policy) Off() bool { return p == nil || len(p.entries) == 0 }

// String is the policy as written.
func (p *Policy) String() string {
	if p.Off() {
		return "(empty)"
	}
	return strings.Join(p.entries, ", ")
}

// CheckURL says whether raw's host and port are allowed, with an error
// that says what to change when they are not.
func (p *Policy) CheckURL(raw string) error {
	if p.Off() {
		return fmt.Errorf("HTTP push delivery is off: conf.ini's [webhook] allow_hosts is empty (list the hosts gmq may deliver to)")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%q is not a URL: %v", raw, err)
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	if p.allowsHost(host, port) {
		return nil
	}
	return fmt.Errorf("host %q port %s is not in conf.ini's [webhook] allow_hosts (%s)", host, port, p)
}

// allowsHost says whether a URL's host (a name or an address) and port
// are listed.
func (p *Policy) allowsHost(host, port string) bool {
	if a, err := netip.ParseAddr(host); err == nil {
		return p.listed(a, port)
	}
	if p.names[host+":"] || p.names[host+":"+port] {
		return true
	}
	for _, s := range p.suffixes {
		if strings.HasSuffix(host, s.dot) && (s.port == "" || s.port == port) {
			return true
		}
	}
	return false
}

// listed says whether a is one of the addresses or networks written, on
// port: an entry with a port allows that port only, one without allows
// every port. (An unknown port, "", matches only entries without one:
// 127.0.0.1:8080 must never stand for 127.0.0.1 on 6379.)
func (p *Policy) listed(a netip.Addr, port string) bool {
	a = a.Unmap()
	for _, n := range p.nets {
		if n.prefix.Contains(a) && (n.port == "" || n.port == port) {
			return true
		}
	}
	return false
}

// AllowsAddr says whether an address and port the broker is about to dial
// may be: the address listed on that port (or on every port), or else any
// address that is not special (loopback, private, link local (the clouds'
// metadata 169.254.169.254), shared, unspecified, multicast, or reserved).
// So a listed name may resolve anywhere public, and to an inside address
// only when that address is listed too, on the port dialled: a name listed
// without a port (any port passes the URL check) that resolves to
// 127.0.0.1, listed as 127.0.0.1:8080, does not open 127.0.0.1:6379.
func (p *Policy) AllowsAddr(ap netip.AddrPort) bool {
	if p.Off() {
		return false
	}
	a := ap.Addr().Unmap()
	return p.listed(a, strconv.Itoa(int(ap.Port()))) || !special(a)
}

// specialNets are the IPv4 and IPv6 ranges netip's predicates leave out:
// those reserved, and those that carry an IPv4 address inside an IPv6 one
// (which a gateway may turn into a loopback or private address).
var specialNets = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"), // shared address space (carrier NAT)
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.88.99.0/24"), // 6to4 relays (deprecated)
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("::/96"),           // IPv4-compatible (deprecated): ::7f00:1 is 127.0.0.1
	netip.MustParsePrefix("::ffff:0:0:0/96"), // IPv4-translated
	netip.MustParsePrefix("64:ff9b::/96"),    // NAT64 of any IPv4 address
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local NAT64
	netip.MustParsePrefix("100::/64"),        // discard only
	netip.MustParsePrefix("2001::/32"),       // Teredo
	netip.MustParsePrefix("2001:2::/48"),     // benchmarking
	netip.MustParsePrefix("2001:10::/28"),    // ORCHID
	netip.MustParsePrefix("2001:20::/28"),    // ORCHIDv2
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("2002::/16"),       // 6to4: any IPv4 address inside
	netip.MustParsePrefix("fec0::/10"),       // site local (deprecated)
}

func special(a netip.Addr) bool {
	if a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() || !a.IsGlobalUnicast() {
		return true
	}
	for _, n := range specialNets {
		if n.Contains(a) {
			return true
		}
	}
	return false
}

// Control is a net.Dialer's Control: it refuses to connect to an address
// the policy does not allow, after the name was resolved, so that what is
// checked is what is dialled.
func (p *Policy) Control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("dial %s: %w", address, err)
	}
	if !p.AllowsAddr(ap) {
		return &RefusedError{Addr: ap}
	}
	return nil
}

// RefusedError is a dial to an address and port the policy refuses.
type RefusedError struct{ Addr netip.AddrPort }

func (e *RefusedError) Error() string {
	return fmt.Sprintf("refused to connect to %s: a loopback, private, link-local or reserved address, not itself in conf.ini's [webhook] allow_hosts on that port", e.Addr)
}

// Dialer is a net.Dialer that obeys the policy.
func (p *Policy) Dialer() *net.Dialer {
	return &net.Dialer{Control: p.Control}
}
