package tcpserver

import (
	"errors"
	"net"
	"syscall"
)

// PeerGone says whether nc's client has closed its end (or reset it), from
// what the kernel already holds for the connection, without reading or
// waiting: a connection's reader goroutine learns of a close only when the
// scheduler runs it after its read returns EOF, and a count of connections
// taken meanwhile would still hold it. beanstalkd counts a connection out as
// its event loop reads the EOF, before it serves the next event, so a stats
// sent right after another connection closed does not count that one
// (pheanstalk's ConnectionTest::testDisconnect). It peeks one byte with
// MSG_PEEK|MSG_DONTWAIT through the descriptor's Control, which takes no
// read lock: the reader blocked in its read is not disturbed and nothing it
// would read is taken. Nothing to read yet (EAGAIN), or bytes still to read,
// is a live connection; a zero-byte read (EOF), an error, or a descriptor
// already closed by its own goroutine is a gone one. Wrappers (the peeked
// first line, the connection limit) are seen through by their NetConn.
func PeerGone(nc net.Conn) bool {
	for {
		w, ok := nc.(interface{ NetConn() net.Conn })
		if !ok {
			break
		}
		nc = w.NetConn()
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return false // not a socket: no way to tell without reading
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	gone := false
	err = raw.Control(func(fd uintptr) {
		var b [1]byte
		for {
			n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			gone = (err == nil && n == 0) || (err != nil && !errors.Is(err, syscall.EAGAIN))
			return
		}
	})
	return gone || err != nil
}

// NetConn is the connection under the peeked bytes (as tls.Conn's is), for
// PeerGone.
func (c *peekedConn) NetConn() net.Conn { return c.Conn }

// NetConn is the connection under the limit's count, for PeerGone.
func (c *limitedConn) NetConn() net.Conn { return c.Conn }
