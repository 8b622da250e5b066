package text

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gmq/gmq/dispatcher"
	"github.com/gmq/gmq/internal/tcpserver"
	"github.com/gmq/gmq/job"
	"github.com/gmq/gmq/kestrel/answer"
	"github.com/gmq/gmq/kestrel/openreads"
)

// maxWait bounds a fetch's wait: a longer timeout waits this long.
const maxWait = 24 * time.Hour

// put <queue> [expiration_ms]: pushes each item, in order, and answers how
// many were put (see answer.NoRoom for those that are not).
func (c *conn) put(req request) error {
	if len(req.args) < 1 {
		return refused("Queue name required.")
	}
	var expires time.Time
	if len(req.args) > 1 {
		ms, err := strconv.ParseInt(req.args[1], 10, 32) // kestrel's is an Int
		if err != nil {
			return refused("Error parsing expiration time.")
		}
		expires = job.ExpiresIn(time.Duration(ms) * time.Millisecond) // 0 or less: expired at once, as kestrel
	}
	queue := req.args[0]
	if err := job.ValidateTopic(queue); err != nil {
		return &tcpserver.StoreErr{Op: "put", Err: err}
	}
	put := 0
	for _, item := range req.items {
		_, err := job.Standing(c.s.d.Push(c.writeCtx(), job.Spec{Topic: queue, Body: item, Priority: job.DefaultPriority,
			TTR: c.s.opts.DefaultTTR, Expires: expires}))
		switch {
		case err == nil: // put, or the queue's unique_from holds this item, and its job stands for it
			put++
		case answer.NoRoom(err):
		default:
			return &tcpserver.StoreErr{Op: "put", Err: fmt.Errorf("item %d of %d (%d put before it): %w", put+1, len(req.items), put, err)}
		}
	}
	if req.dropped > 0 {
		c.s.log.Debug("kestrel text: put dropped items over max_item_size or past 1024", "queue", queue, "dropped", req.dropped)
	}
	c.count(put)
	return nil
}

// get <queue> [timeout_ms] confirms the connection's open reads on queue
// (the newest in the pop's call: dispatcher.PopParams.After), then
// reserves the next item as an open read.
func (c *conn) get(req request) error {
	queue, timeout, err := fetchArgs("get", req.args)
	if err != nil {
		return err
	}
	for c.Reads.Count(queue) > 1 { // more than one: a monitor's
		if err := c.Reads.AckOldest(c.writeCtx(), queue); err != nil {
			return &tcpserver.StoreErr{Op: "get", Err: err}
		}
	}
	closing := c.Reads.Take(queue)
	if c.s.opts.MaxOpenReads < 1 {
		if err := c.Reads.Ack(c.writeCtx(), queue, closing); err != nil {
			return &tcpserver.StoreErr{Op: "get", Err: err}
		}
		return refused("Too many open transactions; limit=" + strconv.Itoa(c.s.opts.MaxOpenReads))
	}
	ctx, cancel := context.WithTimeout(c.Ctx, timeout+c.s.opts.RequestTimeout)
	defer cancel()
	jobs, err := c.Reads.Pop(ctx, queue, closing, dispatcher.PopParams{Topics: []string{queue}, Timeout: timeout})
	if err != nil {
		if c.Ctx.Err() != nil {
			return tcpserver.ErrClose // the client hung up, or the server is closing
		}
		return &tcpserver.StoreErr{Op: "get", Err: err}
	}
	return c.deliver(queue, first(jobs))
}

// peek <queue> [timeout_ms] confirms the connection's open reads on queue,
// as kestrel's does, then looks at the next item, leaving it.
func (c *conn) peek(req request) error {
	queue, timeout, err := fetchArgs("peek", req.args)
	if err != nil {
		return err
	}
	if err := c.Reads.AckAll(c.writeCtx(), queue); err != nil {
		return &tcpserver.StoreErr{Op: "peek", Err: err}
	}
	ctx, cancel := context.WithTimeout(c.Ctx, timeout+c.s.opts.RequestTimeout)
	defer cancel()
	jobs, err := c.s.d.Pop(ctx, dispatcher.PopParams{Topics: []string{queue}, Timeout: timeout, Keep: dispatcher.Peek})
	if err != nil {
		if c.Ctx.Err() != nil {
			return tcpserver.ErrClose
		}
		return &tcpserver.StoreErr{Op: "peek", Err: err}
	}
	j := first(jobs)
	if j != nil && holdsLF(j) {
		return refused(lfMessage(queue, j.PublicID()))
	}
	c.item(j)
	return nil
}

// monitor <queue> <timeout_ms> confirms the connection's open reads on
// queue, then streams items as open reads, each as it comes, until
// MaxOpenReads are open or the time is up and none is ready, then "*".
func (c *conn) monitor(req request) error {
	if len(req.args) < 2 {
		return refused("Queue name & timeout required.")
	}
	timeout, err := parseTimeout(req.args[1])
	if err != nil {
		return err
	}
	queue := req.args[0]
	if err := job.ValidateTopic(queue); err != nil {
		return &tcpserver.StoreErr{Op: "monitor", Err: err}
	}
	if err := c.Reads.AckAll(c.writeCtx(), queue); err != nil {
		return &tcpserver.StoreErr{Op: "monitor", Err: err}
	}
	var ended error // Deliver's: a line feed's "-" line, or the client gone
	err = c.Reads.Monitor(c.Ctx, openreads.MonitorParams{Queue: queue, Deadline: time.Now().Add(timeout),
		Most: c.s.opts.MaxOpenReads, MaxOpen: c.s.opts.MaxOpenReads, RequestTimeout: c.s.opts.RequestTimeout, LateTake: true,
		Deliver: func(j *job.Job) error {
			if ended = c.deliver(queue, j); ended != nil {
				return ended // a line feed: the "-" line ends the stream
			}
			if c.W.Flush() != nil { // each item as it comes
				ended = tcpserver.ErrClose
			}
			return ended
		}})
	switch {
	case ended != nil:
		return ended
	case err != nil && c.Ctx.Err() != nil:
		return tcpserver.ErrClose
	case err != nil:
		return &tcpserver.StoreErr{Op: "monitor", Err: err}
	}
	c.line("*")
	return nil
}

// deliver answers a reserved item (nil: "*") and holds it open, or gives
// back one the protocol cannot carry.
func (c *conn) deliver(queue string, j *job.Job) error {
	if j != nil && holdsLF(j) {
		return c.refuseLF(queue, j)
	}
	if j != nil && j.TTR > 0 { // a TTR of 0: removed as it was popped, nothing to hold
		c.Reads.Hold(queue, j)
	}
	c.item(j)
	return nil
}

// confirm <queue> <count> acks that many of the connection's oldest open
// reads on queue. As kestrel's: none when fewer are open, and a count of 0
// confirms nothing, which kestrel answers as too many.
func (c *conn) confirm(req request) error {
	if len(req.args) < 2 {
		return refused("Queue name & count required.")
	}
	n, err := strconv.ParseInt(req.args[1], 10, 32)
	if err != nil || n < 0 {
		return refused("Error parsing count.")
	}
	queue := req.args[0]
	if n == 0 || int64(c.Reads.Count(queue)) < n {
		return refused("Not that many transactions open.")
	}
	for range n {
		if err := c.Reads.AckOldest(c.writeCtx(), queue); err != nil {
			return &tcpserver.StoreErr{Op: "confirm", Err: err}
		}
	}
	c.count(int(n))
	return nil
}

// flush <queue> removes every item of a queue, the open ones too.
func (c *conn) flush(req request) error {
	return c.queueWrite("flush", req.args, dispatcher.Topic.Flush)
}

// delete <queue> removes the queue.
func (c *conn) delete(req request) error {
	return c.queueWrite("delete", req.args, dispatcher.Topic.Delete)
}

// queueWrite runs flush or delete on the queue args names, answering +0 as kestrel.
func (c *conn) queueWrite(op string, args []string, do func(dispatcher.Topic, context.Context) (int, error)) error {
	if len(args) < 1 {
		return refused("Queue name required.")
	}
	if err := job.ValidateTopic(args[0]); err != nil {
		return &tcpserver.StoreErr{Op: op, Err: err}
	}
	if _, err := do(c.s.d.Topic(args[0]), c.writeCtx()); err != nil {
		return &tcpserver.StoreErr{Op: op, Err: err}
	}
	c.count(0)
	return nil
}

// status answers the server status this broker announces, upper-case
// (":UP"), or with an argument sets it for every broker sharing the Redis
// (+0); "status <s> <broker>" sets one broker's own (a name GET
// /api/v1/status lists, or "this").
func (c *conn) status(req request) error {
	if len(req.args) == 0 {
		c.line(":" + strings.ToUpper(c.s.d.Status().Announced().String()))
		return nil
	}
	st, err := job.ParseStatus(req.args[0])
	if err != nil {
		return refused("Unknown status.")
	}
	broker := ""
	if len(req.args) > 1 {
		broker = req.args[1]
	}
	if err := c.s.d.Status().SetBroker(c.writeCtx(), broker, st); err != nil {
		return &tcpserver.StoreErr{Op: "status", Err: err}
	}
	c.count(0)
	return nil
}

func (c *conn) version(request) error {
	c.line(":" + c.s.opts.Version)
	return nil
}

func (c *conn) quit(request) error { return tcpserver.ErrClose }

// shutdown stops the broker where Options.Shutdown allows it; the broker's
// stop then closes this connection.
func (c *conn) shutdown(request) error {
	if c.s.opts.Shutdown == nil {
		return refused("Shutdown is off on this broker ([kestrel] allow_shutdown).")
	}
	c.s.log.Warn("kestrel text: shutdown asked by a client", "client", c.NC.RemoteAddr().String())
	c.s.opts.Shutdown()
	c.count(0)
	return nil
}

// fetchArgs reads a get's or peek's <queue> [timeout_ms].
func fetchArgs(op string, args []string) (queue string, timeout time.Duration, err error) {
	if len(args) < 1 {
		return "", 0, refused("Queue name required.")
	}
	if len(args) > 1 {
		if timeout, err = parseTimeout(args[1]); err != nil {
			return "", 0, err
		}
	}
	if err := job.ValidateTopic(args[0]); err != nil {
		return "", 0, &tcpserver.StoreErr{Op: op, Err: err}
	}
	return args[0], timeout, nil
}

// parseTimeout reads milliseconds as kestrel does (an Int; less than 0 is
// none), bounded by maxWait.
func parseTimeout(s string) (time.Duration, error) {
	ms, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, refused("Error parsing timeout.")
	}
	return min(time.Duration(max(ms, 0))*time.Millisecond, maxWait), nil
}

func first(jobs []*job.Job) *job.Job {
	if len(jobs) == 0 {
		return nil
	}
	return jobs[0]
}
