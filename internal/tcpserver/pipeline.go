package tcpserver

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"time"

	"github.com/gmq/gmq/internal/budget"
	"github.com/gmq/gmq/job"
)

// ReadBuffer is a connection's read buffer: small, since an idle client
// (most of them: consumers waiting in a reserve) holds one for as long as it
// is connected; a longer line or a body is read through it in pieces.
const ReadBuffer = 4 << 10

// Limits bound what a connection's requests may hold.
type Limits struct {
	// ReadTimeout: a request that has begun must arrive whole within it
	// (0: no limit). Waiting for a request to begin has no limit: an idle
	// client (a consumer waiting in a reserve) keeps its connection.
	ReadTimeout time.Duration
	// Budget is the memory of request bodies, shared with every port
	// (nil: none). A request holds what its body took until it is handled.
	Budget *budget.Budget
}

// framed is a request on its way from the reader to the handler, with the
// budget units its body holds.
type framed[R any] struct {
	req   R
	units int
}

// Pipeline runs a line protocol's connection: a goroutine of its own frames
// requests with read while handle runs them in order, so that a hang-up is
// seen (and ctx's cancel, hangUp, called) even while a handler waits, as a
// blocking reserve or get does. w is flushed whenever no framed request is
// waiting, so pipelined requests share a write. read's last says the client
// is to be closed after that request (no more is read); handle's false
// closes the connection. read reserves its body's memory with hold
// (ReadBody); it is given back once handle has run the request, so the
// bodies a connection has framed but not yet run count too. A request that
// has begun must arrive within limits.ReadTimeout, or the connection is
// closed: a client that starts a request and never finishes it holds nothing
// for long. Pipeline returns once the reader has stopped and the connection
// is closed.
func Pipeline[R any](ctx context.Context, hangUp context.CancelFunc, nc net.Conn, w *bufio.Writer, limits Limits,
	read func(r *bufio.Reader, hold *budget.Hold) (req R, last bool, err error), handle func(R) bool) {
	requests := make(chan framed[R])
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		defer close(requests)
		defer hangUp()
		r := bufio.NewReaderSize(nc, ReadBuffer)
		hold := budget.Hold{Budget: limits.Budget, Ctx: ctx}
		defer hold.Release()
		for {
			if _, err := r.Peek(1); err != nil { // idle until a request begins
				return
			}
			if limits.ReadTimeout > 0 {
				hold.Until = time.Now().Add(limits.ReadTimeout) // a wait for body memory counts too
				_ = nc.SetReadDeadline(hold.Until)              // a connection that refuses it is closed anyway
			}
			req, last, err := read(r, &hold)
			if err != nil {
				return // the client went away, or took longer than ReadTimeout
			}
			if limits.ReadTimeout > 0 {
				hold.Until = time.Time{}
				_ = nc.SetReadDeadline(time.Time{})
			}
			f := framed[R]{req, hold.Take()}
			select {
			case requests <- f:
			case <-ctx.Done():
				limits.Budget.Give(f.units) // never to run
				return
			}
			if last {
				return
			}
		}
	}()
	for f := range requests {
		keepOn := handle(f.req)
		limits.Budget.Give(f.units)
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
	for f := range requests { // framed before the reader saw the hang-up: none run
		limits.Budget.Give(f.units)
	}
}

// ReadBody reads n bytes of a request's body from r. Its memory grows as the
// bytes arrive (GrowBody), never to n at once: a client that announces a
// large body and sends little holds little (a buffer of the announced size,
// made before the bytes came, let 2,000 such clients take hundreds of MB).
// When the budget stays short for budget.Wait, the rest of the body is read
// and thrown away, so that the next request is framed right, and the error
// wraps job.ErrBusy: the front end answers "try again later" and reads on.
// Any other error ends the connection.
func ReadBody(r io.Reader, n int, hold *budget.Hold) ([]byte, error) {
	buf := make([]byte, 0, min(n, ReadBuffer))
	for len(buf) < n {
		if len(buf) == cap(buf) {
			grown, err := GrowBody(buf, len(buf)+1, n, hold)
			if errors.Is(err, job.ErrBusy) {
				if _, skipErr := io.CopyN(io.Discard, r, int64(n-len(buf))); skipErr != nil {
					return nil, skipErr
				}
			}
			if err != nil {
				return nil, err
			}
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

// GrowBody returns buf with room for need bytes: at least double its room,
// never past most. A request's first ReadBuffer bytes are its connection's
// own, as its read buffer is; room past them is reserved with hold first,
// whose budget error (job.ErrBusy) is returned as it is. Every TCP front end
// grows a request's memory this way.
func GrowBody(buf []byte, need, most int, hold *budget.Hold) ([]byte, error) {
	if need <= cap(buf) {
		return buf, nil
	}
	size := min(most, max(2*cap(buf), need))
	if size > ReadBuffer {
		if err := hold.Cover(size); err != nil {
			return nil, err
		}
	}
	grown := make([]byte, len(buf), size)
	copy(grown, buf)
	return grown, nil
}
