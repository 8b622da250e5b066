package serverset

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

const (
	// firstRetry and maxRetry bound the wait after a failed sync.
	firstRetry = 250 * time.Millisecond
	maxRetry   = 5 * time.Second
	// recheck is how often a member is checked for with nothing else
	// happening, so that one deleted by hand comes back.
	recheck = 15 * time.Second
	// sessionPoll is how often a connection without a session is looked
	// at, to notice that it has been without one for too long.
	sessionPoll = time.Second
)

// openACL is kestrel's default (OpenUnsafeACL): anyone may read and write
// the sets.
var openACL = zk.WorldACL(zk.PermAll)

// conn is what one ZooKeeper connection knows of its members. A connection
// may live through several sessions (the client opens a new one when the
// old expires); its members are checked against the session that owns them.
type conn struct {
	zc    *zk.Conn
	s     *ServerSet
	nodes [2]node // as ServerSet.sets: write, read
}

// node is a connection's knowledge of its member in one set.
type node struct {
	path string // our member, "" when none is known
	// unsure: a create failed midway, so a member of this session may exist
	// that we do not know of; the set is searched before joining again.
	unsure bool
}

// runConn runs one connection until ctx ends (nil) or it has had no session
// for two session timeouts (an error: Run starts another). The connection
// is closed on return, which ends its session and removes its members.
func (s *ServerSet) runConn(ctx context.Context) error {
	d := &dialer{}
	zc, events, err := zk.Connect(s.opts.Hosts, s.opts.SessionTimeout, zk.WithDialer(d.dial),
		zk.WithLogger(zkLogger{s}), zk.WithLogInfo(false), zk.WithEventCallback(s.onEvent))
	if err != nil {
		return fmt.Errorf("serverset: connect to ZooKeeper %v: %w", s.opts.Hosts, err)
	}
	defer s.closeConn(zc, d, events)
	c := &conn{zc: zc, s: s}
	timer := time.NewTimer(0)
	defer timer.Stop()
	var downSince time.Time
	var backoff time.Duration
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.kick:
		case <-timer.C:
		}
		if zc.State() != zk.StateHasSession {
			if downSince.IsZero() {
				downSince = time.Now()
			}
			if d := time.Since(downSince); d > 2*s.opts.SessionTimeout {
				return fmt.Errorf("serverset: no ZooKeeper session for %v", d.Round(time.Millisecond))
			}
			timer.Reset(sessionPoll)
			continue
		}
		downSince = time.Time{}
		if err := c.sync(s.wanted()); err != nil {
			backoff = min(max(2*backoff, firstRetry), maxRetry)
			s.log.Warn("serverset: could not update the server sets; retrying", "in", backoff, "err", err)
			timer.Reset(backoff)
			continue
		}
		backoff = 0
		timer.Reset(recheck)
	}
}

// onEvent wakes Run at every change of the session's state (it is called
// on the ZooKeeper client's goroutine, so it must not block).
func (s *ServerSet) onEvent(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	switch ev.State {
	case zk.StateHasSession:
		s.log.Info("serverset: ZooKeeper session established", "server", ev.Server)
	case zk.StateExpired:
		s.log.Warn("serverset: ZooKeeper session expired, and its members with it; joining again in a new session",
			"server", ev.Server)
	}
	s.nudge()
}

// closeConn closes the session (the server removes its members at once),
// then the socket, which ends a handshake the client may be waiting on, and
// waits for the client's goroutines to end, which close events; it gives up
// after a bound, as the client may be dialing a host that does not answer.
func (s *ServerSet) closeConn(zc *zk.Conn, d *dialer, events <-chan zk.Event) {
	zc.Close()
	d.close()
	wait := time.NewTimer(3*time.Second + time.Duration(len(s.opts.Hosts))*time.Second)
	defer wait.Stop()
	for {
		select {
		case _, ok := <-events:
			if !ok {
				return
			}
		case <-wait.C:
			s.log.Warn("serverset: the ZooKeeper client has not stopped after closing; leaving it")
			return
		}
	}
}

// sync makes the members match want in kestrel's order: leaves first,
// writes before reads; then joins, reads before writes; so that a failure
// midway never leaves a broker in the write set and not in the read one.
func (c *conn) sync(want membership) error {
	for i := range c.nodes {
		if !want.has(i) {
			if err := c.leave(i); err != nil {
				return err
			}
		}
	}
	for i := len(c.nodes) - 1; i >= 0; i-- {
		if want.has(i) {
			if err := c.join(i); err != nil {
				return err
			}
		}
	}
	return nil
}

// join makes sure the set at index i has a member of this session.
func (c *conn) join(i int) error {
	set := c.s.sets[i]
	path, err := c.mine(i)
	if err != nil || path != "" {
		return err
	}
	path, err = c.create(set)
	if err != nil {
		c.nodes[i].unsure = true
		return fmt.Errorf("serverset: join %s: %w", set, err)
	}
	c.nodes[i].path = path
	c.s.log.Info("serverset: joined", "set", set, "member", path, "session", fmt.Sprintf("%#x", c.zc.SessionID()))
	return nil
}

// leave removes this session's member from the set at index i, if any.
func (c *conn) leave(i int) error {
	set := c.s.sets[i]
	path, err := c.mine(i)
	if err != nil || path == "" {
		return err
	}
	if err := c.zc.Delete(path, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("serverset: leave %s: delete %s: %w", set, path, err)
	}
	c.nodes[i].path = ""
	c.s.log.Info("serverset: left", "set", set, "member", path)
	return nil
}

// mine is this session's member of the set at index i, or "": the one it
// knows if that still exists and belongs to the session (after an expiry it
// is gone, and after an ensemble lost its data another broker may hold the
// name), else, when unsure, one found by searching the set.
func (c *conn) mine(i int) (string, error) {
	n := &c.nodes[i]
	session := c.zc.SessionID()
	if n.path != "" {
		ok, stat, err := c.zc.Exists(n.path)
		if err != nil {
			return "", fmt.Errorf("serverset: look for member %s: %w", n.path, err)
		}
		if ok && stat.EphemeralOwner == session {
			return n.path, nil
		}
		c.s.log.Warn("serverset: our member is gone (its session ended)", "member", n.path)
		n.path = ""
	}
	if !n.unsure {
		return "", nil
	}
	path, err := c.find(c.s.sets[i], session)
	if err != nil {
		return "", err
	}
	n.path, n.unsure = path, false
	return path, nil
}

// find searches set for a member that session owns.
func (c *conn) find(set string, session int64) (string, error) {
	children, _, err := c.zc.Children(set)
	if errors.Is(err, zk.ErrNoNode) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("serverset: list %s: %w", set, err)
	}
	for _, name := range children {
		if !strings.HasPrefix(name, memberPrefix) {
			continue
		}
		path := set + "/" + name
		ok, stat, err := c.zc.Exists(path)
		if err != nil {
			return "", fmt.Errorf("serverset: look at %s: %w", path, err)
		}
		if ok && stat.EphemeralOwner == session {
			return path, nil
		}
	}
	return "", nil
}

// create adds a member to set, creating the set's path first if missing.
func (c *conn) create(set string) (string, error) {
	for attempt := 0; ; attempt++ {
		path, err := c.zc.Create(set+"/"+memberPrefix, c.s.data, zk.FlagEphemeralSequential, openACL)
		if !errors.Is(err, zk.ErrNoNode) || attempt > 0 {
			return path, err
		}
		if err := c.ensurePath(set); err != nil {
			return "", err
		}
	}
}

// ensurePath creates path and its parents as persistent nodes where
// missing (ZooKeeperUtils.ensurePath, as Twitter commons does it).
func (c *conn) ensurePath(path string) error {
	for i := 1; i <= len(path); i++ {
		if i < len(path) && path[i] != '/' {
			continue
		}
		_, err := c.zc.Create(path[:i], nil, zk.FlagPersistent, openACL)
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("serverset: create %s: %w", path[:i], err)
		}
	}
	return nil
}

// zkLogger sends the ZooKeeper client's chatter (every failed dial while
// the ensemble is away) to the debug level: what matters is logged by Run.
type zkLogger struct{ s *ServerSet }

func (l zkLogger) Printf(format string, args ...any) {
	l.s.log.Debug("serverset: ZooKeeper client", "said", fmt.Sprintf(format, args...))
}
