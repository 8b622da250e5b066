// Package hostname holds the Host rule of gmq's HTTP listeners (the API and
// dashboard, the metrics' own port): a server that listens on loopback only
// answers only to loopback names. A page on a DNS name rebound to 127.0.0.1
// (evil.example) sends its own name as Host, and the browser treats it as a
// site of its own, origin checks and all; the name gives it away.
package hostname

import (
	"net"
	"strings"
)

// Local reports whether host (a request's Host header, with or without its
// port) names this host from loopback: localhost, a name under .localhost,
// a loopback IP, or one of allowed (a proxy's name, in any case). No Host at
// all (HTTP/1.0) is no browser's request, and passes.
func Local(host string, allowed []string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.ToLower(strings.Trim(host, "[]"))
	if host == "" || host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	for _, a := range allowed {
		if strings.EqualFold(a, host) {
			return true
		}
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
