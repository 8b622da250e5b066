package text

import (
	"bufio"
	"context"
	"strconv"

	"github.com/gmq/gmq/internal/budget"
	"github.com/gmq/gmq/job"
	"github.com/gmq/gmq/kestrel/openreads"
)

// serve runs the connection until the client hangs up or quits.
func (c *conn) serve() {
	frame := limits{maxItem: c.s.opts.MaxItemSize, maxRequest: c.s.opts.MaxRequest}
	openreads.Serve(&c.Conn, c.s.opts.Options, func(r *bufio.Reader, hold *budget.Hold) (request, bool, error) {
		req, err := readRequest(r, frame, hold)
		return req, req.closeAfter, err
	}, c.handle)
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
	op := req.verb
	if !known {
		op = "other" // a client's made-up verbs must not make new series
	}
	defer c.Observe(c.s.opts.Observe, op)()
	if !known {
		return c.answer(refused("Unknown command: " + req.verb))
	}
	return c.answer(run(c, req))
}

func (c *conn) line(s string) {
	c.W.WriteString(s)
	c.W.WriteByte('\n')
}

// fail answers "-msg", counted as outcome.
func (c *conn) fail(outcome, msg string) {
	c.Outcome = outcome
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
	c.W.WriteByte(':')
	c.line(j.Body)
}

// writeCtx bounds a request that changes the store (put, flush, delete,
// status) by the request timeout alone: once the request is read whole, it
// is carried out even if the client hangs up at once (as `printf ... | nc`
// does), or the client would never learn its write was dropped. A hang-up
// cancels only what waits (c.Ctx: a get, peek or monitor). One timer serves
// the connection's writes (tcpserver.Deadline): a put takes it anew for
// each item, so each push has its whole timeout.
func (c *conn) writeCtx() context.Context { return c.Deadline.Context() }
