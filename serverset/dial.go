package serverset

import (
	"net"
	"sync"
	"time"
)

// dialer makes the ZooKeeper client's connections for one zk.Conn so that
// they can be shut from outside. Closing a zk.Conn does not end a handshake
// in progress, and the client waits ten receive timeouts (6.7 session
// timeouts) for a server's answer to it: a server that accepts and does not
// answer (one still starting) would hold a Run that is stopping, or one
// starting over, that long. Shutting the socket ends the wait at once.
type dialer struct {
	mu     sync.Mutex
	conn   net.Conn // the latest connection
	closed bool
}

// dial is a zk.Dialer.
func (d *dialer) dial(network, address string, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout(network, address, timeout)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		c.Close()
		return nil, net.ErrClosed
	}
	d.conn = c
	return c, nil
}

// close shuts the latest connection and refuses new ones.
func (d *dialer) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	if d.conn != nil {
		d.conn.Close()
	}
}
