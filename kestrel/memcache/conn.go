package memcache

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/gmq/gmq/dispatcher"
	"github.com/gmq/gmq/internal/budget"
	"github.com/gmq/gmq/internal/tcpserver"
	"github.com/gmq/gmq/job"
	"github.com/gmq/gmq/kestrel/openreads"
)

// conn is one memcache client connection: a reader goroutine frames
// requests, serve runs them in order (so a hang-up cancels a get that
// waits), and the reliable reads its gets and monitors open are given back
// when it ends.
type conn struct {
	openreads.Conn
	s *Server
}

func newConn(s *Server, nc net.Conn) *conn {
	return &conn{s: s, Conn: openreads.NewConn(s.Front, nc,
		openreads.Options{Dispatcher: s.d, RequestTimeout: s.opts.RequestTimeout, Log: s.log, Name: "kestrel"})}
}

// serve runs the connection until the client hangs up or quits, then gives
// its open reads back.
func (c *conn) serve() {
	openreads.Serve(&c.Conn, c.s.opts.Options, func(r *bufio.Reader, hold *budget.Hold) (request, bool, error) {
		req, err := readRequest(r, c.s.opts.MaxItemSize, c.s.opts.MaxRequest, hold)
		return req, req.closeAfter, err
	}, c.handle)
}

// handle runs one request and writes its answer; false closes the connection.
func (c *conn) handle(req request) bool {
	if req.reply != "" {
		c.reply(req.reply, req.noreply)
		return !req.closeAfter
	}
	op := req.verb
	if !knownVerbs[op] {
		op = "other" // a client's made-up verbs must not make new series
	}
	defer c.Observe(c.s.opts.Observe, op)()
	return c.answer(c.run(req))
}

// run runs a request through its verb's handler: nil when it was answered,
// else the failure for answer to write.
func (c *conn) run(req request) error {
	switch req.verb {
	case "get", "gets":
		if len(req.args) < 1 {
			return fatal("get needs a queue name")
		}
		return c.get(req.args[0])
	case "set":
		return c.set(req)
	case "version":
		c.line("VERSION " + c.s.opts.Version)
		return nil
	case "stats":
		c.stats()
		return nil
	case "quit":
		return tcpserver.ErrClose
	case "delete", "flush":
		if len(req.args) < 1 {
			return fatal(req.verb + " needs a queue name")
		}
		return c.flush(req.verb, req.args[0], req.noreply)
	case "flush_all":
		return c.write("flush_all", "Flushed all queues.", func(ctx context.Context) error {
			_, err := c.s.d.FlushAll(ctx)
			return err
		})
	case "status":
		return c.status(req.args)
	case "reload":
		if c.s.opts.Reload == nil {
			return errError
		}
		return c.write("reload", "Reloaded config.", c.s.opts.Reload)
	case "dump_stats":
		return c.dumpStats(req.args)
	case "monitor":
		return c.monitor(req.args)
	case "confirm":
		return c.confirm(req.args)
	case "shutdown":
		if c.s.opts.Shutdown == nil {
			return refused("shutdown is off ([kestrel] allow_shutdown)")
		}
		c.s.log.Warn("kestrel: shutdown asked by a client", "client", c.NC.RemoteAddr().String())
		c.s.opts.Shutdown()
		return tcpserver.ErrClose
	case "flush_expired", "flush_all_expired":
		return c.flushExpired(req)
	}
	return fatal("unknown command " + strconv.Quote(req.verb))
}

// write runs command op's write of the store, do, and answers line.
func (c *conn) write(op, line string, do func(context.Context) error) error {
	if err := do(c.writeCtx()); err != nil {
		return &tcpserver.StoreErr{Op: op, Err: err}
	}
	c.line(line)
	return nil
}

func (c *conn) line(s string) {
	switch {
	case strings.HasPrefix(s, "SERVER_ERROR"):
		c.Outcome = tcpserver.ServerError
	case strings.HasPrefix(s, "CLIENT_ERROR"), s == "ERROR":
		c.Outcome = tcpserver.ClientError
	}
	c.W.WriteString(s)
	c.W.WriteString("\r\n")
}

// flushExpired expires a queue's items whose time ran out (flush_expired
// <q>) or every queue's (flush_all_expired) and answers how many.
func (c *conn) flushExpired(req request) error {
	queue := ""
	if req.verb == "flush_expired" {
		if len(req.args) < 1 {
			return fatal("flush_expired needs a queue name")
		}
		queue = req.args[0]
		if err := checkQueue(queue); err != nil {
			return fatal(err.Error())
		}
	}
	ctx, cancel := context.WithTimeout(c.Ctx, c.s.opts.RequestTimeout)
	defer cancel()
	n, err := c.s.d.Topic(queue).FlushExpired(ctx)
	if err != nil {
		return &tcpserver.StoreErr{Op: req.verb, Err: err}
	}
	c.line(strconv.Itoa(n))
	return nil
}

// set pushes the item, with its expiry by memcache's rule (expiry).
func (c *conn) set(req request) error {
	args, err := parseSet(req.args)
	if err != nil {
		return refused(err.Error())
	}
	c.s.count("cmd_set")
	ctx := c.writeCtx()
	// An item the queue's unique_from holds is stored: its job stands for it.
	_, err = job.Standing(c.s.d.Push(ctx, job.Spec{Topic: args.queue, Body: string(req.data), Priority: job.DefaultPriority,
		TTR: c.s.opts.DefaultTTR, Expires: expiry(args.exp, time.Now())}))
	if err != nil {
		return &tcpserver.StoreErr{Op: "set", Err: err, NoReply: req.noreply}
	}
	c.reply("STORED", req.noreply)
	return nil
}

// writeCtx bounds a request that changes the store (set, flush, delete,
// status, reload) by the request timeout alone: once the request is read
// whole, it is carried out even if the client hangs up at once (as
// `printf ... | nc` does, and a set with noreply may), or the client would
// never learn its write was dropped. A hang-up cancels only what waits
// (c.Ctx: a get with /t=).
// Only the handler calls it: one timer serves the connection's writes
// (tcpserver.Deadline).
func (c *conn) writeCtx() context.Context { return c.Deadline.Context() }

// reply answers line unless the client asked for no reply (memcache's
// "noreply", which pymemcache sends by default on set and delete). Errors are
// answered even then, as memcached does: a client must hear of them.
func (c *conn) reply(line string, noreply bool) {
	if !noreply {
		c.line(line)
	}
}

// status answers the server status this broker announces (upper-case, as
// kestrel), or with an argument sets it for every broker sharing the Redis
// (END); "status <s> <broker>" sets one broker's own (a name GET
// /api/v1/status lists, or "this"). An unknown status closes the
// connection, as kestrel does.
func (c *conn) status(args []string) error {
	if len(args) == 0 {
		c.line(strings.ToUpper(c.s.d.Status().Announced().String()))
		return nil
	}
	st, err := job.ParseStatus(args[0])
	if err != nil {
		return fatal(err.Error())
	}
	ctx := c.writeCtx()
	broker := ""
	if len(args) > 1 {
		broker = args[1]
	}
	if err := c.s.d.Status().SetBroker(ctx, broker, st); err != nil {
		return &tcpserver.StoreErr{Op: "status", Err: err}
	}
	c.line("END")
	return nil
}

// flush removes every item of a queue (flush: END), or the queue itself
// (delete: DELETED), as kestrel answers.
func (c *conn) flush(verb, queue string, noreply bool) error {
	if err := checkQueue(queue); err != nil {
		return fatal(err.Error())
	}
	ctx := c.writeCtx()
	var err error
	if verb == "delete" {
		_, err = c.s.d.Topic(queue).Delete(ctx)
	} else {
		_, err = c.s.d.Topic(queue).Flush(ctx)
	}
	if err != nil {
		return &tcpserver.StoreErr{Op: verb, Err: err}
	}
	if verb == "delete" {
		c.reply("DELETED", noreply)
	} else {
		c.reply("END", noreply)
	}
	return nil
}

// get pops (or peeks at) the next item of a queue, opening, closing or
// aborting the connection's reliable read on it as the options say.
func (c *conn) get(key string) error {
	o, err := parseGet(key)
	if err != nil {
		return fatal(err.Error())
	}
	ctx, cancel := context.WithTimeout(c.Ctx, o.timeout+c.s.opts.RequestTimeout)
	defer cancel()
	if o.abort {
		if err := c.Reads.Abort(ctx, o.queue); err != nil {
			return &tcpserver.StoreErr{Op: "abort", Err: err}
		}
		c.line("END")
		return nil
	}
	// closing: the open read /close acks; with /open, in one call with the
	// pop of the next (dispatcher.PopParams.After).
	var closing *openreads.Read
	if o.close {
		closing = c.Reads.Take(o.queue)
		if !o.open {
			if err := c.Reads.Ack(ctx, o.queue, closing); err != nil {
				return &tcpserver.StoreErr{Op: "close", Err: err}
			}
			c.line("END")
			return nil
		}
	}
	if n := c.Reads.Count(o.queue); !o.peek && ((!o.open && n > 0) || (o.open && n >= c.s.opts.MaxOpenReads)) {
		// Kestrel's rules: no plain get beside an open read, and no more
		// open reads per queue than max_open_reads.
		if err := c.Reads.Ack(ctx, o.queue, closing); err != nil {
			return &tcpserver.StoreErr{Op: "close", Err: err}
		}
		return errFatalError
	}
	p := dispatcher.PopParams{Topics: []string{o.queue}, Timeout: o.timeout, Keep: dispatcher.Take} // a plain get takes the item for good: one script, no ack
	switch {
	case o.peek:
		c.s.count("cmd_peek")
		p.Keep = dispatcher.Peek
	case o.open:
		c.s.count("cmd_get")
		p.Keep = dispatcher.Reserve
	default:
		c.s.count("cmd_get")
	}
	// /close/open: the closed read is acked in the pop's call; if it is gone
	// meanwhile, the next is read as a plain /open (openreads.Reads.Pop).
	jobs, err := c.Reads.Pop(ctx, o.queue, closing, p)
	if err != nil {
		if c.Ctx.Err() != nil {
			return tcpserver.ErrClose // the client hung up, or the server is closing
		}
		op := "get"
		if o.peek {
			op = "peek"
		}
		return &tcpserver.StoreErr{Op: op, Err: err}
	}
	var j *job.Job
	if len(jobs) > 0 {
		j = jobs[0]
	}
	if j != nil && o.open && j.TTR > 0 {
		c.Reads.Hold(o.queue, j)
	}
	c.value(key, j)
	return nil
}

// value answers an item, or END for none. The VALUE line names the key as
// the client sent it, options included, as memcached does; kestrel names the
// bare queue, which memcache clients that check the key (pymemcache,
// php-memcached) refuse.
func (c *conn) value(key string, j *job.Job) {
	if j == nil {
		c.s.count("get_misses")
		c.line("END")
		return
	}
	c.s.count("get_hits")
	fmt.Fprintf(c.W, "VALUE %s 0 %d\r\n", key, len(j.Body))
	c.W.WriteString(j.Body)
	c.W.WriteString("\r\nEND\r\n")
}

// monitor <queue> <seconds> [max-items] streams items as they arrive, each
// an open read (as VALUE, data, END), for up to that long, until max-items
// (default max_open_reads) are open on the queue, then END. Confirm closes
// them.
func (c *conn) monitor(args []string) error {
	if len(args) < 2 {
		return fatal("monitor <queue> <seconds> [max-items]")
	}
	secs, err1 := strconv.Atoi(args[1])
	most, err2 := c.s.opts.MaxOpenReads, error(nil)
	if len(args) > 2 {
		most, err2 = strconv.Atoi(args[2])
	}
	if err := errors.Join(err1, err2, checkQueue(args[0])); err != nil || secs < 0 || most < 0 {
		return fatal("monitor <queue> <seconds> [max-items]: whole numbers, and a valid queue name")
	}
	queue := args[0]
	var gone bool // the client went away as an item was written
	err := c.Reads.Monitor(c.Ctx, openreads.MonitorParams{Queue: queue, Deadline: time.Now().Add(time.Duration(min(secs, 86400)) * time.Second),
		Most: most, MaxOpen: c.s.opts.MaxOpenReads, RequestTimeout: c.s.opts.RequestTimeout,
		Deliver: func(j *job.Job) error {
			if j.TTR > 0 {
				c.Reads.Hold(queue, j)
			}
			c.value(queue, j)
			if c.W.Flush() != nil { // each item as it comes
				gone = true
				return tcpserver.ErrClose
			}
			return nil
		}})
	switch {
	case gone, err != nil && c.Ctx.Err() != nil:
		return tcpserver.ErrClose
	case err != nil:
		return &tcpserver.StoreErr{Op: "monitor", Err: err}
	}
	c.line("END")
	return nil
}

// confirm <queue> <count> acks that many of the connection's oldest open
// reads on the queue: END, or ERROR when fewer are open (nothing is acked).
func (c *conn) confirm(args []string) error {
	if len(args) < 2 {
		return fatal("confirm <queue> <count>")
	}
	n, err := strconv.Atoi(args[1])
	if err != nil || n < 0 {
		return fatal("confirm <queue> <count>: count is a whole number")
	}
	if c.Reads.Count(args[0]) < n {
		return errError
	}
	ctx, cancel := context.WithTimeout(c.Ctx, c.s.opts.RequestTimeout)
	defer cancel()
	for range n {
		if err := c.Reads.AckOldest(ctx, args[0]); err != nil {
			return &tcpserver.StoreErr{Op: "confirm", Err: err}
		}
	}
	c.line("END")
	return nil
}

// knownVerbs are the commands gmq's kestrel protocol has.
var knownVerbs = map[string]bool{"get": true, "gets": true, "set": true, "monitor": true, "confirm": true,
	"delete": true, "flush": true, "flush_all": true, "flush_expired": true, "flush_all_expired": true,
	"status": true, "reload": true, "shutdown": true, "stats": true, "dump_stats": true, "version": true, "quit": true}
