package tcpserver

import (
	"bufio"
	"context"
	"io"
	"net"
	"time"
)

// readBuffer is a connection's read buffer: small, since an idle client
// (most of them: consumers waiting in a reserve) holds one for as long as it
// is connected; a longer line or a body is read through it in pieces.
const readBuffer = 4 << 10

// Pipeline runs a line protocol's connection: a goroutine of its own frames
// requests with read while handle runs them in order, so that a hang-up is
// seen (and ctx's cancel, hangUp, called) even while a handler waits, as a
// blocking reserve or get does. w is flushed whenever no framed request is
// waiting, so pipelined requests share a write. read's last says the client
// is to be closed after that request (no more is read); handle's false
// closes the connection. A request that has begun must arrive whole within
// readTimeout (0: no limit), or the connection is closed: a client that
// starts a request and never finishes it holds nothing for long. Waiting for
// a request to begin has no limit: an idle client keeps its connection.
// Pipeline returns once the reader has stopped and the connection is closed.
func Pipeline[R any](ctx context.Context, hangUp context.CancelFunc, nc net.Conn, w *bufio.Writer, readTimeout time.Duration,
	read func(*bufio.Reader) (req R, last bool, err error), handle func(R) bool) {
	requests := make(chan R)
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		defer close(requests)
		defer hangUp()
		r := bufio.NewReaderSize(nc, readBuffer)
		for {
			if _, err := r.Peek(1); err != nil { // idle until a request begins
				return
			}
			if readTimeout > 0 {
				_ = nc.SetReadDeadline(time.Now().Add(readTimeout)) // a connection that refuses it is closed anyway
			}
			req, last, err := read(r)
			if err != nil {
				return // the client went away, or took longer than readTimeout
			}
			if readTimeout > 0 {
				_ = nc.SetReadDeadline(time.Time{})
			}
			select {
			case requests <- req:
			case <-ctx.Done():
				return
			}
			if last {
				return
			}
		}
	}()
	for req := range requests {
		keepOn := handle(req)
		if len(requests) == 0 || !keepOn {
			if err := w.Flush(); err != nil {
				break
			}
		}
		if !keepOn {
			break
		}
	}
	hangUp()
	nc.Close() // ends the reader
	<-readerDone
}

// ReadBody reads n bytes of a request's body from r. Its memory grows as the
// bytes arrive, never to n at once: a client that announces a large body and
// sends little holds little (a buffer of the announced size, made before
// the bytes came, let 2,000 such clients take hundreds of MB).
func ReadBody(r io.Reader, n int) ([]byte, error) {
	buf := make([]byte, 0, min(n, readBuffer))
	for len(buf) < n {
		if len(buf) == cap(buf) { // double, up to n: never more than the body needs
			grown := make([]byte, len(buf), min(n, 2*cap(buf)))
			copy(grown, buf)
			buf = grown
		}
		got, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+got]
		if err != nil && len(buf) < n {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	return buf, nil
}
