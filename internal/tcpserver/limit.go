package tcpserver

import (
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
)

// LimitListener lets at most max connections be open at once. A connection
// over the limit is handed to refuse, which may write the protocol's own
// error before it is closed, so the client is told why, not just cut off.
// Accept errors that pass (out of file descriptors) are waited out here, with
// a log line per burst, so that no server above it (net/http logs each one)
// sees them.
func LimitListener(ln net.Listener, max int, refuse func(net.Conn), log *slog.Logger) net.Listener {
	return &limitListener{Listener: ln, max: int64(max), refuse: refuse, retry: newAcceptRetry(log, ln.Addr().String())}
}

type limitListener struct {
	net.Listener
	max    int64
	open   atomic.Int64
	refuse func(net.Conn)
	retry  *acceptRetry // only Accept, called by one loop, uses it
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			if l.retry.wait(err) {
				continue
			}
			return nil, err
		}
		l.retry.accepted()
		if l.open.Add(1) > l.max {
			l.open.Add(-1)
			go func() { // a slow client must not hold up the accept loop
				l.refuse(c)
				c.Close()
			}()
			continue
		}
		return &limitedConn{Conn: c, release: func() { l.open.Add(-1) }}, nil
	}
}

type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}
