package tcpserver

import (
	"bufio"
	"context"
	"net"
)

// Pipeline runs a line protocol's connection: a goroutine of its own frames
// requests with read while handle runs them in order, so that a hang-up is
// seen (and ctx's cancel, hangUp, called) even while a handler waits, as a
// blocking reserve or get does. w is flushed whenever no framed request is
// waiting, so pipelined requests share a write. read's last says the client
// is to be closed after that request (no more is read); handle's false
// closes the connection. Pipeline returns once the reader has stopped and
// the connection is closed.
func Pipeline[R any](ctx context.Context, hangUp context.CancelFunc, nc net.Conn, w *bufio.Writer,
	read func(*bufio.Reader) (req R, last bool, err error), handle func(R) bool) {
	requests := make(chan R)
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		defer close(requests)
		defer hangUp()
		r := bufio.NewReaderSize(nc, 64<<10)
		for {
			req, last, err := read(r)
			if err != nil {
				return
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
