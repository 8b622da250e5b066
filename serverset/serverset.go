// Package serverset publishes a broker in ZooKeeper server sets, as Twitter's
// kestrel does (its ZooKeeperServerStatus), so that clients that discover
// servers through ZooKeeper (Finagle's zk2 resolver, Twitter commons'
// ServerSet) find the brokers that take the operation they want.
//
// A broker is a member of up to two sets: PathPrefix/write while it takes
// pushes, PathPrefix/read while it serves pops. A member is an ephemeral
// sequential znode, member_0000000042, whose data is the JSON that Twitter
// commons' JsonCodec writes and Finagle reads:
//
//	{"serviceEndpoint":{"host":"10.1.2.3","port":22133},
//	 "additionalEndpoints":{"memcache":{"host":"10.1.2.3","port":22133},"http":{...}},
//	 "status":"ALIVE"}
//
// Ephemeral, so that a broker that dies leaves its sets when its session
// lapses, without anyone cleaning up after it.
package serverset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gmq/gmq/job"
)

// ErrInvalid: New was given options it cannot run with; the message names
// the field.
var ErrInvalid = errors.New("serverset: invalid options")

// Endpoint is a named port of this broker.
type Endpoint struct {
	Name string // "memcache", "thrift", "text", "http", "beanstalk"...
	Port int
}

// Options are a ServerSet's settings, taken as given: their defaults are the
// broker's configuration's, not this package's.
type Options struct {
	// Hosts is the ZooKeeper ensemble, each "host:port" (a bare host means
	// port 2181).
	Hosts []string
	// PathPrefix is where the sets live: members go under PathPrefix+"/write"
	// and PathPrefix+"/read", created (persistent) when missing.
	PathPrefix string
	// AdvertiseHost is the host written in the member data, the address
	// clients dial: a wildcard (0.0.0.0, ::) is refused, as no client can
	// dial it; a loopback address is allowed (one host's tests) with a
	// warning.
	AdvertiseHost string
	// Main is the service endpoint, the one a client that names no endpoint
	// dials (kestrel uses its memcache port). It is listed among the
	// additional endpoints too, under its name, as kestrel does.
	Main Endpoint
	// Additional are every other endpoint by name.
	Additional map[string]int
	// SessionTimeout is the ZooKeeper session's: how long after this broker
	// stops answering (killed, partitioned) its members vanish. The server
	// bounds it (by default between 2 and 20 ticks).
	SessionTimeout time.Duration
	// Log receives joins, leaves and ZooKeeper's troubles; nil discards.
	Log *slog.Logger
}

// ServerSet keeps this broker's membership in the server sets as its status
// says. Make it with New, feed it statuses with SetStatus, run it with Run.
type ServerSet struct {
	opts Options
	log  *slog.Logger
	data []byte    // the member's JSON, the same in both sets
	sets [2]string // the sets' paths: write, then read

	mu     sync.Mutex
	status job.Status
	known  bool // false until the first SetStatus: join nothing before
	kick   chan struct{}
}

// New checks opts and prepares the member data; it does not connect: Run
// owns the connection. It returns an error wrapping ErrInvalid that names
// the field at fault.
func New(opts Options) (*ServerSet, error) {
	if err := validate(opts); err != nil {
		return nil, err
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if ip := net.ParseIP(opts.AdvertiseHost); ip != nil && ip.IsLoopback() {
		log.Warn("serverset: advertising a loopback address; only clients on this host can reach it",
			"advertise_host", opts.AdvertiseHost)
	}
	data, err := json.Marshal(newMember(opts))
	if err != nil {
		return nil, fmt.Errorf("serverset: encode member data: %w", err)
	}
	return &ServerSet{
		opts: opts,
		log:  log,
		data: data,
		sets: [2]string{opts.PathPrefix + "/write", opts.PathPrefix + "/read"},
		kick: make(chan struct{}, 1),
	}, nil
}

// SetStatus tells which sets to be in: Up joins write and read; WriteAvoid
// and ReadOnly, read only (kestrel's WriteAvoid is a hint to write
// elsewhere, so it leaves the write set); Quiescent, none. It never blocks:
// Run applies the latest status as soon as it has a session. Until the
// first SetStatus the broker is in no set, so that it is not advertised
// before it says it is ready.
//
// Kestrel leaves a set when a stricter status is announced, before it is
// enforced, so that clients stop sending before they are refused: give it
// the announced status (job.StatusLayer's Announced), not the enforced one.
func (s *ServerSet) SetStatus(st job.Status) {
	s.mu.Lock()
	s.status, s.known = st, true
	s.mu.Unlock()
	s.nudge()
}

// wanted is which sets the latest status asks for.
func (s *ServerSet) wanted() membership {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.known {
		return membership{}
	}
	return membershipOf(s.status)
}

// nudge wakes Run; a nudge already pending covers this one.
func (s *ServerSet) nudge() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Run keeps the membership until ctx ends, then closes the session, which
// removes its members at once (not a session timeout later), and returns
// once the ZooKeeper client's goroutines have ended. It dials ZooKeeper
// itself and never gives up, so that a broker outlives its ensemble's
// troubles: while the ensemble is away it retries, logging each failure;
// when the session expires it joins again in the next one; when no session
// comes back for two session timeouts (an ensemble that lost its data
// refuses a client that has seen newer transactions) it starts over with a
// new connection. It returns nil: it has no failure of its own to report.
// Run must not be called twice at once.
func (s *ServerSet) Run(ctx context.Context) error {
	for {
		err := s.runConn(ctx)
		if ctx.Err() != nil {
			return nil
		}
		s.log.Warn("serverset: starting a new ZooKeeper connection", "hosts", s.opts.Hosts, "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
}

// validate names the first field of opts that New cannot take.
func validate(opts Options) error {
	if len(opts.Hosts) == 0 {
		return fmt.Errorf("%w: Hosts: no ZooKeeper host given", ErrInvalid)
	}
	for _, h := range opts.Hosts {
		if err := validHost(h); err != nil {
			return fmt.Errorf("%w: Hosts: %q: %w", ErrInvalid, h, err)
		}
	}
	if err := validPath(opts.PathPrefix); err != nil {
		return fmt.Errorf("%w: PathPrefix: %q: %w", ErrInvalid, opts.PathPrefix, err)
	}
	switch ip := net.ParseIP(opts.AdvertiseHost); {
	case strings.TrimSpace(opts.AdvertiseHost) == "":
		return fmt.Errorf("%w: AdvertiseHost: empty: name the address clients dial", ErrInvalid)
	case ip != nil && ip.IsUnspecified():
		return fmt.Errorf("%w: AdvertiseHost: %q is a wildcard address, which no client can dial", ErrInvalid, opts.AdvertiseHost)
	}
	if err := validEndpoint(opts.Main.Name, opts.Main.Port); err != nil {
		return fmt.Errorf("%w: Main: %w", ErrInvalid, err)
	}
	for name, port := range opts.Additional {
		if err := validEndpoint(name, port); err != nil {
			return fmt.Errorf("%w: Additional: %w", ErrInvalid, err)
		}
	}
	if p, ok := opts.Additional[opts.Main.Name]; ok && p != opts.Main.Port {
		return fmt.Errorf("%w: Additional: %q has port %d but Main gives it %d", ErrInvalid, opts.Main.Name, p, opts.Main.Port)
	}
	if opts.SessionTimeout <= 0 {
		return fmt.Errorf("%w: SessionTimeout: %v: want a positive duration", ErrInvalid, opts.SessionTimeout)
	}
	return nil
}

// validHost accepts "host:port" or a bare host.
func validHost(h string) error {
	if h == "" || strings.ContainsAny(h, "/ ") {
		return errors.New(`want "host:port"`)
	}
	if !strings.Contains(h, ":") || (strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]")) {
		return nil // a bare host: port 2181
	}
	host, port, err := net.SplitHostPort(h)
	if err != nil {
		return fmt.Errorf(`want "host:port": %w`, err)
	}
	if host == "" {
		return errors.New("no host")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("port %q: want 1 to 65535", port)
	}
	return nil
}

// validPath accepts an absolute ZooKeeper path below the root, without a
// trailing slash or empty, "." or ".." parts.
func validPath(p string) error {
	if !strings.HasPrefix(p, "/") || p == "/" {
		return errors.New(`want an absolute path below the root, such as "/gmq/serverset"`)
	}
	for _, part := range strings.Split(p[1:], "/") {
		if part == "" || part == "." || part == ".." {
			return errors.New(`empty, "." and ".." parts are not allowed (nor a trailing "/")`)
		}
	}
	return nil
}

// validEndpoint accepts a named port.
func validEndpoint(name string, port int) error {
	if strings.TrimSpace(name) == "" {
		return errors.New("an endpoint has no name")
	}
	if port < 1 || port > 65535 {
		return fmt.Errorf("endpoint %q: port %d: want 1 to 65535", name, port)
	}
	return nil
}
