package beanstalk

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"net"

	"github.com/gmq/gmq/dispatcher"
	"github.com/gmq/gmq/internal/budget"
	"github.com/gmq/gmq/internal/tcpserver"
	"github.com/gmq/gmq/job"
)

// reservation is a job this connection reserved.
type reservation struct {
	attempt  int           // the delivery, so acts on a later redelivery are refused
	ttr      time.Duration // to renew the deadline on touch
	deadline time.Time     // on this machine's clock
}

// conn is one client connection. A reader goroutine frames requests; serve
// runs them in order, so commands pipelined behind a blocking reserve wait for
// it, and a hang-up cancels the reserve.
type conn struct {
	s        *Server
	nc       net.Conn
	w        *bufio.Writer
	ctx      context.Context
	hangUp   context.CancelFunc
	use      string
	watch    []string
	reserved map[uint64]reservation
	producer bool
	worker   bool
	outcome  string // of the command being handled: tcpserver.OK, or the error class it was answered
	stat     string // the command being handled, by its stats name ("cmd-put"): the answers table's verb
	// deadline bounds each command's store calls by the request timeout
	// (c.ctx without its cancel: a command read whole is carried out).
	deadline *tcpserver.Deadline
}

func newConn(s *Server, nc net.Conn) *conn {
	ctx, cancel := context.WithCancel(context.Background())
	return &conn{s: s, nc: nc, w: bufio.NewWriter(nc), ctx: ctx, hangUp: cancel,
		use: "default", watch: []string{"default"}, reserved: map[uint64]reservation{},
		deadline: tcpserver.NewDeadline(context.WithoutCancel(ctx), s.opts.RequestTimeout)}
}

// serve runs the connection until the client hangs up or quits, then gives
// its reserved jobs back.
func (c *conn) serve() {
	limits := tcpserver.Limits{ReadTimeout: c.s.opts.ReadTimeout, Budget: c.s.opts.Budget}
	tcpserver.Pipeline(c.ctx, c.hangUp, c.nc, c.w, limits, func(r *bufio.Reader, hold *budget.Hold) (request, bool, error) {
		req, err := readRequest(r, c.s.opts.MaxJobSize, hold)
		return req, false, err
	}, c.handle)
	c.deadline.Stop()
	c.releaseAll()
	c.s.closeConn(c)
}

// releaseAll gives back every job the connection still holds, at once, as
// beanstalkd does when a connection closes.
func (c *conn) releaseAll() {
	for id, r := range c.reserved {
		ctx, cancel := c.s.ctx(context.Background())
		err := c.settle(ctx, id, r.attempt, dispatcher.SettleParams{Action: dispatcher.ActionGiveBack})
		cancel()
		if err != nil && !errors.Is(err, job.ErrStale) && !errors.Is(err, job.ErrNotReserved) && !errors.Is(err, job.ErrNotFound) {
			c.s.log.Warn("beanstalk: giving back a job of a closed connection failed; its TTR will",
				"id", id, "err", err)
		}
	}
}

func (c *conn) reply(s string) {
	switch s {
	case msgInternalError, msgOutOfMemory:
		c.outcome = tcpserver.ServerError
	}
	c.w.WriteString(s)
}

func (c *conn) replyf(format string, args ...any) { fmt.Fprintf(c.w, format, args...) }

// replyJob sends "WORD id bytes\r\nbody\r\n".
func (c *conn) replyJob(word string, j *job.Job) {
	c.replyf("%s %d %d\r\n", word, j.ID, len(j.Body))
	c.w.WriteString(j.Body)
	c.w.WriteString("\r\n")
}

// fail answers a store error by the answers table (answers.go), with the
// cause in the log when it is the server's.
func (c *conn) fail(err error) {
	if logged(job.KindOf(err)) {
		c.s.log.Warn("beanstalk: "+strings.TrimPrefix(c.stat, "cmd-")+" failed", "err", err)
	}
	c.reply(answer(c.stat, err))
}

// handle runs one request; false closes the connection.
func (c *conn) handle(req request) bool {
	if req.reply != "" {
		c.reply(req.reply)
		return true
	}
	cmd := req.cmd
	if cmd.op == opQuit {
		return false
	}
	c.s.count(cmd.stat)
	c.stat = cmd.stat
	if observe := c.s.opts.Observe; observe != nil {
		c.outcome = tcpserver.OK
		defer func(start time.Time) { observe(strings.TrimPrefix(cmd.stat, "cmd-"), c.outcome, time.Since(start)) }(time.Now())
	}
	// A command read whole is carried out even if the client hangs up at
	// once (`printf 'put ...' | nc`): the hang-up cancels only a reserve's
	// wait, which has its own context (c.ctx).
	ctx := c.deadline.Context()
	switch cmd.op {
	case opPut:
		c.put(ctx, cmd, req.body)
	case opReserve:
		c.reserve(-1)
	case opReserveTimeout:
		c.reserve(cmd.n)
	case opReserveJob:
		c.reserveJob(ctx, cmd.id)
	case opDelete:
		c.delete(ctx, cmd.id)
	case opRelease:
		c.release(ctx, cmd)
	case opBury:
		c.bury(ctx, cmd)
	case opTouch:
		c.touch(ctx, cmd.id)
	case opPeekJob:
		c.peekJob(ctx, cmd.id)
	case opPeekReady:
		c.peekTube(ctx, job.Ready)
	case opPeekDelayed:
		c.peekTube(ctx, job.Delayed)
	case opPeekBuried:
		c.peekTube(ctx, job.Buried)
	case opKick:
		c.kick(ctx, cmd.n)
	case opKickJob:
		c.kickJob(ctx, cmd.id)
	case opUse:
		c.useTube(cmd.tube)
	case opWatch:
		c.watchTube(cmd.tube)
	case opIgnore:
		c.ignoreTube(cmd.tube)
	case opListTubeUsed:
		c.replyf("USING %s\r\n", c.use)
	case opListTubesWatched:
		c.replyYAMLList(c.watch)
	case opListTubes:
		c.listTubes(ctx)
	case opStats:
		c.stats(ctx)
	case opStatsJob:
		c.statsJob(ctx, cmd.id)
	case opStatsTube:
		c.statsTube(ctx, cmd.tube)
	case opPauseTube:
		c.pauseTube(ctx, cmd.tube, cmd.delay)
	default:
		c.reply(msgUnknownCommand)
	}
	return true
}

func (c *conn) put(ctx context.Context, cmd command, body []byte) {
	c.producer = true
	ttr := max(cmd.ttr, 1) // beanstalkd's minimum TTR
	got, err := c.s.d.Push(ctx, job.Spec{Topic: c.use, Body: string(body), Priority: cmd.pri,
		Delay: time.Duration(cmd.delay) * time.Second, TTR: time.Duration(ttr) * time.Second})
	var held *job.UniqueError
	if errors.As(err, &held) {
		// The tube's unique_from holds this body: the job that holds it is
		// the one the producer meant (beanstalkd has no word for a refusal).
		c.replyf("INSERTED %d\r\n", held.ID)
		return
	}
	if err != nil {
		c.fail(err)
		return
	}
	c.replyf("INSERTED %d\r\n", got.ID)
}

// safetyMargin is beanstalkd's: in the last second before a reservation runs
// out, reserve answers DEADLINE_SOON instead of waiting.
const safetyMargin = time.Second

// soonest is the earliest deadline of this connection's live reservations;
// those past their deadline went back to ready and are forgotten.
func (c *conn) soonest() (time.Time, bool) {
	now := time.Now()
	var first time.Time
	for id, r := range c.reserved {
		if !r.deadline.After(now) {
			delete(c.reserved, id)
			continue
		}
		if first.IsZero() || r.deadline.Before(first) {
			first = r.deadline
		}
	}
	return first, !first.IsZero()
}

// reserve waits up to timeout seconds (negative: forever) for a job of a
// watched tube.
func (c *conn) reserve(timeout int64) {
	c.worker = true
	if d, ok := c.soonest(); ok && time.Until(d) <= safetyMargin {
		// In the margin already: a ready job is still handed out, else DEADLINE_SOON.
		if j, done := c.tryReserve(0); !done {
			return
		} else if j == nil {
			c.reply(msgDeadlineSoon)
		}
		return
	}
	var deadline time.Time
	if timeout >= 0 {
		deadline = time.Now().Add(time.Duration(timeout) * time.Second)
	}
	c.setWaiting(1)
	defer c.setWaiting(-1)
	for {
		wait := time.Hour
		if !deadline.IsZero() {
			wait = time.Until(deadline)
		}
		margin, hasMargin := c.soonest()
		if hasMargin {
			wait = min(wait, time.Until(margin)-safetyMargin)
		}
		j, ok := c.tryReserve(max(wait, 0))
		if !ok || j != nil {
			return
		}
		if hasMargin && time.Until(margin) <= safetyMargin {
			c.reply(msgDeadlineSoon)
			return
		}
		if !deadline.IsZero() && !time.Now().Before(deadline) {
			c.reply(msgTimedOut)
			return
		}
	}
}

// tryReserve reserves a job of the watched tubes within wait and answers
// RESERVED; it returns the job (nil if none came) and false if the
// connection must stop (hung up, or the store failed and was answered).
func (c *conn) tryReserve(wait time.Duration) (*job.Job, bool) {
	ctx, cancel := context.WithTimeout(c.ctx, wait+c.s.opts.RequestTimeout)
	defer cancel()
	jobs, err := c.s.d.Pop(ctx, dispatcher.PopParams{Topics: c.watch, Timeout: wait, Order: dispatcher.BestOrder})
	if err != nil {
		if c.ctx.Err() != nil {
			return nil, false
		}
		c.fail(err)
		return nil, false
	}
	if len(jobs) == 0 {
		return nil, true
	}
	c.hold(jobs[0])
	c.replyJob("RESERVED", jobs[0])
	return jobs[0], true
}

// hold records a job this connection reserved.
func (c *conn) hold(j *job.Job) {
	if j.State == job.Reserved {
		c.reserved[j.ID] = reservation{attempt: j.Attempt(), ttr: j.TTR, deadline: time.Now().Add(j.TimeLeft())}
	}
}

func (c *conn) setWaiting(delta int) {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	c.s.waiting += delta
	for _, t := range c.watch {
		c.s.ref(t, func(r *tubeRefs) { r.waiting += delta })
	}
}

func (c *conn) reserveJob(ctx context.Context, id uint64) {
	j, err := c.s.d.ReserveJob(ctx, strconv.FormatUint(id, 10))
	if err != nil {
		c.fail(err)
		return
	}
	c.worker = true
	c.hold(j)
	c.replyJob("RESERVED", j)
}

// settle does p's action to job id, this connection's delivery attempt
// of it (0: none).
func (c *conn) settle(ctx context.Context, id uint64, attempt int, p dispatcher.SettleParams) error {
	p.Ack = dispatcher.Ack{ID: strconv.FormatUint(id, 10), Attempt: attempt}
	_, err := c.s.d.Settle(ctx, p)
	return err
}

func (c *conn) delete(ctx context.Context, id uint64) {
	var err error
	if r, ok := c.reserved[id]; ok {
		delete(c.reserved, id)
		err = c.settle(ctx, id, r.attempt, dispatcher.SettleParams{Action: dispatcher.ActionAck})
	} else {
		// a job reserved by another connection stays
		err = c.settle(ctx, id, 0, dispatcher.SettleParams{Action: dispatcher.ActionDeleteUnreserved})
	}
	if err != nil {
		c.fail(err)
		return
	}
	c.reply("DELETED\r\n")
}

// held returns this connection's reservation of a job, or answers NOT_FOUND.
func (c *conn) held(id uint64) (reservation, bool) {
	r, ok := c.reserved[id]
	if !ok {
		c.reply(msgNotFound)
	}
	return r, ok
}

func (c *conn) release(ctx context.Context, cmd command) {
	r, ok := c.held(cmd.id)
	if !ok {
		return
	}
	delete(c.reserved, cmd.id)
	err := c.settle(ctx, cmd.id, r.attempt, dispatcher.SettleParams{Action: dispatcher.ActionRelease,
		Priority: int64(cmd.pri), Delay: time.Duration(cmd.delay) * time.Second})
	if err != nil {
		c.fail(err)
		return
	}
	c.reply("RELEASED\r\n")
}

func (c *conn) bury(ctx context.Context, cmd command) {
	r, ok := c.held(cmd.id)
	if !ok {
		return
	}
	delete(c.reserved, cmd.id)
	if err := c.settle(ctx, cmd.id, r.attempt, dispatcher.SettleParams{Action: dispatcher.ActionBury, Priority: int64(cmd.pri)}); err != nil {
		c.fail(err)
		return
	}
	c.reply("BURIED\r\n")
}

func (c *conn) touch(ctx context.Context, id uint64) {
	r, ok := c.held(id)
	if !ok {
		return
	}
	if err := c.settle(ctx, id, r.attempt, dispatcher.SettleParams{Action: dispatcher.ActionTouch}); err != nil {
		delete(c.reserved, id)
		c.fail(err)
		return
	}
	r.deadline = time.Now().Add(r.ttr)
	c.reserved[id] = r
	c.reply("TOUCHED\r\n")
}

func (c *conn) peekJob(ctx context.Context, id uint64) {
	j, err := c.s.d.Peek(ctx, strconv.FormatUint(id, 10))
	if err != nil {
		c.fail(err)
		return
	}
	c.replyJob("FOUND", j)
}

func (c *conn) peekTube(ctx context.Context, st job.State) {
	j, err := c.s.d.PeekTopic(ctx, c.use, st)
	if err != nil {
		c.fail(err)
		return
	}
	c.replyJob("FOUND", j)
}

func (c *conn) kick(ctx context.Context, n int64) {
	kicked, err := c.s.d.Kick(ctx, c.use, int(n))
	if err != nil {
		c.fail(err)
		return
	}
	c.replyf("KICKED %d\r\n", kicked)
}

func (c *conn) kickJob(ctx context.Context, id uint64) {
	if err := c.settle(ctx, id, 0, dispatcher.SettleParams{Action: dispatcher.ActionKick}); err != nil {
		c.fail(err)
		return
	}
	c.reply("KICKED\r\n")
}

func (c *conn) useTube(tube string) {
	c.s.mu.Lock()
	c.s.ref(c.use, func(r *tubeRefs) { r.using-- })
	c.s.ref(tube, func(r *tubeRefs) { r.using++ })
	c.s.mu.Unlock()
	c.use = tube
	c.replyf("USING %s\r\n", tube)
}

func (c *conn) watchTube(tube string) {
	if !c.watching(tube) {
		c.watch = append(c.watch, tube)
		c.s.mu.Lock()
		c.s.ref(tube, func(r *tubeRefs) { r.watching++ })
		c.s.mu.Unlock()
	}
	c.replyf("WATCHING %d\r\n", len(c.watch))
}

func (c *conn) ignoreTube(tube string) {
	for i, t := range c.watch {
		if t != tube {
			continue
		}
		if len(c.watch) < 2 {
			c.reply(msgNotIgnored)
			return
		}
		c.watch = append(c.watch[:i:i], c.watch[i+1:]...)
		c.s.mu.Lock()
		c.s.ref(tube, func(r *tubeRefs) { r.watching-- })
		c.s.mu.Unlock()
		break
	}
	c.replyf("WATCHING %d\r\n", len(c.watch))
}

func (c *conn) watching(tube string) bool {
	for _, t := range c.watch {
		if t == tube {
			return true
		}
	}
	return false
}

// tubeExists: a tube exists while a job or a connection refers to it, and
// "default" always (c.tube, which stats-tube and list-tubes follow too).
func (c *conn) tubeExists(ctx context.Context, tube string) (bool, error) {
	_, _, err := c.tube(ctx, tube)
	if errors.Is(err, job.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

func (c *conn) pauseTube(ctx context.Context, tube string, secs uint32) {
	ok, err := c.tubeExists(ctx, tube)
	if err != nil {
		c.fail(err)
		return
	}
	if !ok {
		c.reply(msgNotFound)
		return
	}
	if _, err := c.s.d.Pause(ctx, tube, time.Duration(secs)*time.Second, true); err != nil {
		c.fail(err)
		return
	}
	c.reply("PAUSED\r\n")
}
