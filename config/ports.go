package config

// The listeners: how many, which are open beyond loopback, and their TLS
// and Redis's.

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
)

// IsLoopback reports whether a listen address reaches this host only:
// localhost or a loopback IP. An empty host (":8000") is every interface.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// OpenPorts lists the unauthenticated front ends (beanstalkd's protocol,
// JSON-RPC, kestrel's memcache, text and thrift protocols) that listen
// beyond loopback, as "key = address": every front end but HTTP.
func (c Config) OpenPorts() []string {
	var open []string
	if c.BeanstalkAddr != "" && !IsLoopback(c.BeanstalkAddr) {
		open = append(open, "[beanstalk] addr = "+c.BeanstalkAddr)
	}
	if c.RPCAddr != "" && !IsLoopback(c.RPCAddr) {
		open = append(open, "[rpc] addr = "+c.RPCAddr)
	}
	for _, p := range []struct{ key, addr string }{{"addr", c.KestrelAddr}, {"text_addr", c.KestrelTextAddr}, {"thrift_addr", c.KestrelThriftAddr}} {
		if p.addr != "" && !IsLoopback(p.addr) {
			open = append(open, "[kestrel] "+p.key+" = "+p.addr)
		}
	}
	return open
}

// MetricsBeyondToken reports whether the metrics' own listener serves
// beyond loopback while a token guards the HTTP port: it needs no token, so
// the token would look like it hid the topic names and counts it shows.
func (c Config) MetricsBeyondToken() bool {
	return c.Token != "" && c.MetricsAddr != "" && !IsLoopback(c.MetricsAddr)
}

// CheckOpenPorts refuses a token alongside open unauthenticated ports,
// unless allow_open_ports says the operator guards them another way: the
// token would look like it protects the broker while those ports do not.
func (c Config) CheckOpenPorts() error {
	if open := c.OpenPorts(); c.Token != "" && len(open) > 0 && !c.AllowOpenPorts {
		return fmt.Errorf("[web] token is set, but %s listens beyond loopback and its protocol has no authentication: "+
			"bind it to 127.0.0.1, turn it off (\"\"), or set [server] allow_open_ports = true if a firewall guards it",
			strings.Join(open, " and "))
	}
	return nil
}

// Listeners counts the listeners the configuration opens: HTTP, and each
// other front end whose address is set.
func (c Config) Listeners() int {
	n := 1
	for _, addr := range []string{c.BeanstalkAddr, c.RPCAddr, c.KestrelAddr, c.KestrelTextAddr, c.KestrelThriftAddr, c.MetricsAddr} {
		if addr != "" {
			n++
		}
	}
	return n
}

// HTTPTLS builds the HTTP listener's TLS configuration from [server]
// tls_cert and tls_key: nil when neither is set (plain HTTP).
func (c Config) HTTPTLS() (*tls.Config, error) {
	if c.TLSCert == "" && c.TLSKey == "" {
		return nil, nil
	}
	if c.TLSCert == "" || c.TLSKey == "" {
		return nil, errors.New("[server] tls_cert and tls_key go together")
	}
	pair, err := tls.LoadX509KeyPair(c.TLSCert, c.TLSKey)
	if err != nil {
		return nil, fmt.Errorf("[server] tls_cert, tls_key: %w", err)
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{pair}}, nil
}

// RedisTLS builds the TLS configuration for Redis from [redis] tls_*: nil
// when none is set (a rediss:// URL then uses the system's roots).
func (c Config) RedisTLS() (*tls.Config, error) {
	if c.RedisTLSCA == "" && c.RedisTLSCert == "" && c.RedisTLSKey == "" && c.RedisTLSServerName == "" {
		return nil, nil
	}
	conf := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.RedisTLSServerName}
	if c.RedisTLSCA != "" {
		pem, err := os.ReadFile(c.RedisTLSCA)
		if err != nil {
			return nil, fmt.Errorf("[redis] tls_ca: %w", err)
		}
		conf.RootCAs = x509.NewCertPool()
		if !conf.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("[redis] tls_ca %s holds no PEM certificate", c.RedisTLSCA)
		}
	}
	if (c.RedisTLSCert == "") != (c.RedisTLSKey == "") {
		return nil, errors.New("[redis] tls_cert and tls_key go together")
	}
	if c.RedisTLSCert != "" {
		pair, err := tls.LoadX509KeyPair(c.RedisTLSCert, c.RedisTLSKey)
		if err != nil {
			return nil, fmt.Errorf("[redis] tls_cert, tls_key: %w", err)
		}
		conf.Certificates = []tls.Certificate{pair}
	}
	return conf, nil
}
