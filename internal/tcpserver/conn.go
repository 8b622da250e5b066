package tcpserver

import (
	"bufio"
	"context"
	"net"
	"time"

	"github.com/gmq/gmq/internal/budget"
)

// Conn is what a connection of a request-answer protocol holds alike
// (kestrel's memcache, text and thrift ports embed it): the client's
// connection and its buffered writer, the context a hang-up or the
// server's Close ends (it cancels what waits: a get), the one timer that
// bounds the handler's writes (Deadline), and the outcome of the request
// being handled, for Observe.
type Conn struct {
	NC       net.Conn
	W        *bufio.Writer
	Ctx      context.Context
	HangUp   context.CancelFunc
	Deadline *Deadline
	// Outcome is the request's: OK, or the error class it was answered
	// (ClientError, ServerError).
	Outcome string
}

// NewConn begins the connection nc on front f, its writes bounded by
// requestTimeout. A write is carried out even when the client hangs up
// once it is read: its deadline's context is not the connection's.
func NewConn(f *Front, nc net.Conn, requestTimeout time.Duration) Conn {
	ctx, cancel := context.WithCancel(f.Context())
	return Conn{NC: nc, W: bufio.NewWriter(nc), Ctx: ctx, HangUp: cancel,
		Deadline: NewDeadline(context.WithoutCancel(ctx), requestTimeout)}
}

// Serve runs c's requests (Pipeline: read frames them, handle runs them in
// order) within opts' read timeout and body budget, until the client hangs
// up or a handler ends the connection; then it stops the deadline's timer.
func Serve[R any](c *Conn, opts Options, read func(r *bufio.Reader, hold *budget.Hold) (req R, last bool, err error), handle func(R) bool) {
	Pipeline(c.Ctx, c.HangUp, c.NC, c.W, Limits{ReadTimeout: opts.ReadTimeout, Budget: opts.Budget}, read, handle)
	c.Deadline.Stop()
}

// Observe starts timing request op for observe (nil: none), its Outcome OK
// until it is answered otherwise, and returns what reports it when the
// request is done: defer c.Observe(observe, op)().
func (c *Conn) Observe(observe func(op, code string, took time.Duration), op string) func() {
	if observe == nil {
		return func() {}
	}
	c.Outcome = OK
	start := time.Now()
	return func() { observe(op, c.Outcome, time.Since(start)) }
}
