package beanstalk

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
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
	// producer and worker are set by the connection's goroutine and read
	// by another's stats, so they are atomic.
	producer atomic.Bool
	worker   atomic.Bool
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
		if err != nil && !job.NotHeld(err) {
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
	var err error // a handler's failure, answered by the answers table (fail)
	switch cmd.op {
	case opPut:
		err = c.put(ctx, cmd, req.body)
	case opReserve:
		err = c.reserve(-1)
	case opReserveTimeout:
		err = c.reserve(cmd.n)
	case opReserveJob:
		err = c.reserveJob(ctx, cmd.id)
	case opDelete:
		err = c.delete(ctx, cmd.id)
	case opRelease:
		err = c.release(ctx, cmd)
	case opBury:
		err = c.bury(ctx, cmd)
	case opTouch:
		err = c.touch(ctx, cmd.id)
	case opPeekJob:
		err = c.peekJob(ctx, cmd.id)
	case opPeekReady:
		err = c.peekTube(ctx, job.Ready)
	case opPeekDelayed:
		err = c.peekTube(ctx, job.Delayed)
	case opPeekBuried:
		err = c.peekTube(ctx, job.Buried)
	case opKick:
		err = c.kick(ctx, cmd.n)
	case opKickJob:
		err = c.kickJob(ctx, cmd.id)
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
		err = c.listTubes(ctx)
	case opStats:
		err = c.stats(ctx)
	case opStatsJob:
		err = c.statsJob(ctx, cmd.id)
	case opStatsTube:
		err = c.statsTube(ctx, cmd.tube)
	case opPauseTube:
		err = c.pauseTube(ctx, cmd.tube, cmd.delay)
	default:
		c.reply(msgUnknownCommand)
	}
	if err != nil {
		c.fail(err)
	}
	return true
}

func (c *conn) put(ctx context.Context, cmd command, body []byte) error {
	c.producer.Store(true)
	ttr := max(cmd.ttr, 1) // beanstalkd's minimum TTR
	// A body the tube's unique_from holds answers the job that holds it:
	// the one the producer meant (job.Standing).
	got, err := job.Standing(c.s.d.Push(ctx, job.Spec{Topic: c.use, Body: string(body), Priority: cmd.pri,
		Delay: time.Duration(cmd.delay) * time.Second, TTR: time.Duration(ttr) * time.Second}))
	if err != nil {
		return err
	}
	c.replyf("INSERTED %d\r\n", got.ID)
	return nil
}

// settle does p's action to job id, this connection's delivery attempt
// of it (0: none).
func (c *conn) settle(ctx context.Context, id uint64, attempt int, p dispatcher.SettleParams) error {
	p.Ack = dispatcher.Ack{ID: strconv.FormatUint(id, 10), Attempt: attempt}
	_, err := c.s.d.Settle(ctx, p)
	return err
}

func (c *conn) delete(ctx context.Context, id uint64) error {
	var err error
	if r, ok := c.reserved[id]; ok {
		err = c.settle(ctx, id, r.attempt, dispatcher.SettleParams{Action: dispatcher.ActionAck})
		c.forget(id, err)
	} else {
		// a job reserved by another connection stays
		err = c.settle(ctx, id, 0, dispatcher.SettleParams{Action: dispatcher.ActionDeleteUnreserved})
	}
	if err != nil {
		return err
	}
	c.reply("DELETED\r\n")
	return nil
}

// forget drops this connection's reservation of job id after a command on
// it that ended it (err nil: a delete, release or bury went through), or
// whose store says the job is no longer this delivery (not found, stale, in
// another state). A command the store could not settle (Redis down, slow,
// at maxmemory) leaves it held: a retry of the command, and the
// connection's end, still find it, and only the truth is NOT_FOUND.
func (c *conn) forget(id uint64, err error) {
	if err != nil {
		if k := job.KindOf(err); k != job.KindNotFound && k != job.KindConflict {
			return
		}
	}
	delete(c.reserved, id)
}

// held returns this connection's reservation of a job, or answers NOT_FOUND.
func (c *conn) held(id uint64) (reservation, bool) {
	r, ok := c.reserved[id]
	if !ok {
		c.reply(msgNotFound)
	}
	return r, ok
}

func (c *conn) release(ctx context.Context, cmd command) error {
	r, ok := c.held(cmd.id)
	if !ok {
		return nil
	}
	err := c.settle(ctx, cmd.id, r.attempt, dispatcher.SettleParams{Action: dispatcher.ActionRelease,
		Priority: int64(cmd.pri), Delay: time.Duration(cmd.delay) * time.Second})
	c.forget(cmd.id, err)
	if err != nil {
		return err
	}
	c.reply("RELEASED\r\n")
	return nil
}

func (c *conn) bury(ctx context.Context, cmd command) error {
	r, ok := c.held(cmd.id)
	if !ok {
		return nil
	}
	err := c.settle(ctx, cmd.id, r.attempt, dispatcher.SettleParams{Action: dispatcher.ActionBury, Priority: int64(cmd.pri)})
	c.forget(cmd.id, err)
	if err != nil {
		return err
	}
	c.reply("BURIED\r\n")
	return nil
}

func (c *conn) touch(ctx context.Context, id uint64) error {
	r, ok := c.held(id)
	if !ok {
		return nil
	}
	if err := c.settle(ctx, id, r.attempt, dispatcher.SettleParams{Action: dispatcher.ActionTouch}); err != nil {
		c.forget(id, err)
		return err
	}
	r.deadline = time.Now().Add(r.ttr)
	c.reserved[id] = r
	c.reply("TOUCHED\r\n")
	return nil
}

func (c *conn) peekJob(ctx context.Context, id uint64) error {
	j, err := c.peek(ctx, id)
	if err != nil {
		return err
	}
	c.replyJob("FOUND", j)
	return nil
}

// peek reads job id as beanstalkd's clients see jobs: a completed or
// cancelled one (kept by its topic's keep_completed) is gone, as
// beanstalkd's deleted jobs are.
func (c *conn) peek(ctx context.Context, id uint64) (*job.Job, error) {
	j, err := c.s.d.Peek(ctx, strconv.FormatUint(id, 10))
	if err == nil && (j.State == job.Completed || j.State == job.Cancelled) {
		return nil, fmt.Errorf("job %d is %s: %w", id, j.State, job.ErrNotFound)
	}
	return j, err
}

func (c *conn) peekTube(ctx context.Context, st job.State) error {
	j, err := c.s.d.Topic(c.use).Peek(ctx, st)
	if err != nil {
		return err
	}
	c.replyJob("FOUND", j)
	return nil
}

func (c *conn) kick(ctx context.Context, n int64) error {
	kicked, err := c.s.d.Topic(c.use).Kick(ctx, int(n))
	if err != nil {
		return err
	}
	c.replyf("KICKED %d\r\n", kicked)
	return nil
}

func (c *conn) kickJob(ctx context.Context, id uint64) error {
	if err := c.settle(ctx, id, 0, dispatcher.SettleParams{Action: dispatcher.ActionKick}); err != nil {
		return err
	}
	c.reply("KICKED\r\n")
	return nil
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
	_, _, exists, err := c.tube(ctx, tube)
	return exists, err
}

func (c *conn) pauseTube(ctx context.Context, tube string, secs uint32) error {
	ok, err := c.tubeExists(ctx, tube)
	if err != nil {
		return err
	}
	if !ok {
		c.reply(msgNotFound)
		return nil
	}
	if _, err := c.s.d.Topic(tube).Pause(ctx, dispatcher.PauseParams{For: time.Duration(secs) * time.Second, EvenIfEmpty: true}); err != nil {
		return err
	}
	c.reply("PAUSED\r\n")
	return nil
}
