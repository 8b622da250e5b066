package thrift

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"time"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/gmq/gmq/internal/budget"
	"github.com/gmq/gmq/internal/tcpserver"
	"github.com/gmq/gmq/kestrel/thrift/wire"
)

// conn is one client connection: it implements the generated service
// (verbs.go), one method per call. A reader goroutine frames requests
// (tcpserver.Serve); serve runs them in order, so a hang-up cancels a get
// that waits.
type conn struct {
	tcpserver.Conn
	s  *Server
	id uint64 // the owner of the reads it opens (registry)

	processor *wire.KestrelProcessor
	out       thrift.TProtocol // binary protocol, framed (TFramedTransport), into W

	// Of the call being handled: its name for Observe ("other" until a
	// handler names it), and whether the connection closes after its
	// answer (Conn.Outcome is its outcome).
	op         string
	closeAfter bool
}

func newConn(s *Server, nc net.Conn) *conn {
	c := &conn{Conn: tcpserver.NewConn(s.Front, nc, s.opts.RequestTimeout), s: s, id: s.conns.Add(1)}
	// The framed transport flushes what it wrote at the end of each answer;
	// Pipeline flushes W once no request is waiting, so that answers to
	// pipelined calls share a write.
	framed := thrift.NewTFramedTransportConf(&thrift.StreamTransport{Writer: unflushed{c.W}}, s.cfg)
	c.out = thrift.NewTBinaryProtocolConf(framed, s.cfg)
	c.processor = wire.NewKestrelProcessor(c)
	return c
}

// unflushed hides its writer's Flush from the framed transport.
type unflushed struct{ w io.Writer }

func (u unflushed) Write(p []byte) (int, error) { return u.w.Write(p) }

// serve runs the connection until the client hangs up. The reads it
// opened stay open (registry.disown).
func (c *conn) serve() {
	tcpserver.Serve(&c.Conn, c.s.opts.Options, func(r *bufio.Reader, hold *budget.Hold) (frame, bool, error) {
		f, err := readFrame(r, c.s.opts.MaxRequest, hold)
		return f, f.last, err
	}, c.handle)
	c.s.reads.disown(c.id)
}

// handle runs one framed call through the processor, which answers it;
// false closes the connection.
func (c *conn) handle(f frame) bool {
	c.op, c.Outcome, c.closeAfter = "other", tcpserver.OK, false
	if observe := c.s.opts.Observe; observe != nil {
		defer func(start time.Time) { observe(c.op, c.Outcome, time.Since(start)) }(time.Now())
	}
	if f.refused != nil {
		return c.refuse(f)
	}
	ok, err := c.processor.Process(c.Ctx, newBoundedProtocol(f.msg, c.s.cfg), c.out)
	var unknown thrift.TApplicationException
	switch {
	case errors.Is(err, thrift.ErrAbandonRequest): // the client hung up, or the server is closing
		return false
	case errors.As(err, &unknown) && unknown.TypeId() == thrift.UNKNOWN_METHOD:
		c.Outcome = tcpserver.ClientError // answered; the frame held the whole call, so the next one is framed right
		return true
	case !ok: // a message it could not read (answered when it could name the call), or an answer not written
		if c.Outcome == tcpserver.OK {
			c.Outcome = tcpserver.ClientError
		}
		c.s.log.Debug("kestrel thrift: closing a connection", "client", c.NC.RemoteAddr().String(), "err", err)
		return false
	}
	return !c.closeAfter
}

// refuse answers a frame refused unread with a TApplicationException to
// the call it begins, and says whether the connection reads on. A frame
// whose first bytes name no call is not answered: the connection closes.
func (c *conn) refuse(f frame) bool {
	in := thrift.NewTBinaryProtocolConf(&thrift.TMemoryBuffer{Buffer: bytes.NewBuffer(f.msg)}, c.s.cfg)
	name, _, seq, err := in.ReadMessageBegin(c.Ctx)
	if _, known := c.processor.GetProcessorFunction(name); known && err == nil {
		c.op = name
	}
	msg := c.failure(f.refused).Error()
	if err != nil {
		return false
	}
	x := thrift.NewTApplicationException(thrift.INTERNAL_ERROR, "Internal error processing "+name+": "+msg)
	if c.out.WriteMessageBegin(c.Ctx, name, thrift.EXCEPTION, seq) != nil || x.Write(c.Ctx, c.out) != nil ||
		c.out.WriteMessageEnd(c.Ctx) != nil || c.out.Flush(c.Ctx) != nil {
		return false
	}
	return !f.last
}

// writeCtx bounds a call that changes the store (put, confirm, flush,
// status) by the request timeout alone: once the call is read whole, it is
// carried out even if the client hangs up at once, or the client would
// never learn its write was dropped. A hang-up cancels only what waits (a
// get). One timer serves the connection's writes (tcpserver.Deadline): a
// put takes it anew for each item, so each push has its whole timeout.
func (c *conn) writeCtx() context.Context { return c.Deadline.Context() }

// readCtx bounds a read of the store that does not wait (peek) by the
// request timeout and the connection's end.
func (c *conn) readCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.Ctx, c.s.opts.RequestTimeout)
}

// hungUp says the connection has ended (or the server is closing): a
// call's wait was cut short, and there is no one to answer.
func (c *conn) hungUp() bool { return c.Ctx.Err() != nil }
