package text

import (
	"bufio"
	"context"
	"net"
	"strconv"
	"time"

	"github.com/gmq/gmq/internal/budget"
	"github.com/gmq/gmq/internal/tcpserver"
	"github.com/gmq/gmq/job"
	"github.com/gmq/gmq/kestrel/openreads"
)

// conn is one client connection. A reader goroutine frames requests; serve
// runs them in order, so a hang-up cancels a get that waits.
type conn struct {
	s      *Server
	nc     net.Conn
	w      *bufio.Writer
	ctx    context.Context
	hangUp context.CancelFunc

	outcome string // of the command being handled: tcpserver.OK, or the error class it was answered
	// deadline bounds the handler's writes by the request timeout (writeCtx).
	deadline *tcpserver.Deadline
	reads    *openreads.Reads // the connection's open reads
}

func newConn(s *Server, nc net.Conn) *conn {
	ctx, cancel := context.WithCancel(s.Context())
	return &conn{s: s, nc: nc, w: bufio.NewWriter(nc), ctx: ctx, hangUp: cancel,
		deadline: tcpserver.NewDeadline(context.WithoutCancel(ctx), s.opts.RequestTimeout),
		reads:    openreads.New(ctx, openreads.Options{Dispatcher: s.d, RequestTimeout: s.opts.RequestTimeout, Log: s.log, Name: "kestrel text"})}
}

// serve runs the connection until the client hangs up or quits, then gives
// its open reads back to their queues.
func (c *conn) serve() {
	bounds := tcpserver.Limits{ReadTimeout: c.s.opts.ReadTimeout, Budget: c.s.opts.Budget}
	frame := limits{maxItem: c.s.opts.MaxItemSize, maxRequest: c.s.opts.MaxRequest}
	tcpserver.Pipeline(c.ctx, c.hangUp, c.nc, c.w, bounds, func(r *bufio.Reader, hold *budget.Hold) (request, bool, error) {
		req, err := readRequest(r, frame, hold)
		return req, req.closeAfter, err
	}, c.handle)
	c.deadline.Stop()
	c.reads.End()
}

// verbs is the verb table: one handler per verb, each checking its
// arguments, then calling the dispatcher; it answers itself, or returns
// the failure for answer to write.
var verbs = map[string]func(*conn, request) error{
	"put":      (*conn).put,
	"get":      (*conn).get,
	"peek":     (*conn).peek,
	"monitor":  (*conn).monitor,
	"confirm":  (*conn).confirm,
	"flush":    (*conn).flush,
	"delete":   (*conn).delete,
	"status":   (*conn).status,
	"version":  (*conn).version,
	"quit":     (*conn).quit,
	"shutdown": (*conn).shutdown,
}

// handle runs one request and writes its answer; false closes the connection.
func (c *conn) handle(req request) bool {
	if req.reply != "" {
		c.line(req.reply)
		return !req.closeAfter
	}
	run, known := verbs[req.verb]
	if observe := c.s.opts.Observe; observe != nil {
		op := req.verb
		if !known {
			op = "other" // a client's made-up verbs must not make new series
		}
		c.outcome = tcpserver.OK
		defer func(start time.Time) { observe(op, c.outcome, time.Since(start)) }(time.Now())
	}
	if !known {
		return c.answer(refused("Unknown command: " + req.verb))
	}
	return c.answer(run(c, req))
}

func (c *conn) line(s string) {
	c.w.WriteString(s)
	c.w.WriteByte('\n')
}

// fail answers "-msg", counted as outcome.
func (c *conn) fail(outcome, msg string) {
	c.outcome = outcome
	c.line("-" + msg)
}

// count answers "+n".
func (c *conn) count(n int) { c.line("+" + strconv.Itoa(n)) }

// item answers ":<item>", or "*" for none (j nil).
func (c *conn) item(j *job.Job) {
	if j == nil {
		c.line("*")
		return
	}
	c.w.WriteByte(':')
	c.line(j.Body)
}

// writeCtx bounds a request that changes the store (put, flush, delete,
// status) by the request timeout alone: once the request is read whole, it
// is carried out even if the client hangs up at once (as `printf ... | nc`
// does), or the client would never learn its write was dropped. A hang-up
// cancels only what waits (c.ctx: a get, peek or monitor). One timer serves
// the connection's writes (tcpserver.Deadline): a put takes it anew for
// each item, so each push has its whole timeout.
func (c *conn) writeCtx() context.Context { return c.deadline.Context() }
