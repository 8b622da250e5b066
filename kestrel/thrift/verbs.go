package thrift

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/gmq/gmq/dispatcher"
	"github.com/gmq/gmq/job"
	"github.com/gmq/gmq/kestrel/answer"
	"github.com/gmq/gmq/kestrel/thrift/wire"
)

// The handlers, one a call of the Kestrel service. Each names its call
// (c.op), checks its arguments, calls the dispatcher and returns what
// succeeds; a failure goes through c.failure (answers.go).

// maxGetItems bounds the items one get gives.
const maxGetItems = 1024

// maxWait bounds a get's wait: a longer timeout waits this long.
const maxWait = 24 * time.Hour

var _ wire.Kestrel = (*conn)(nil)

// Put pushes items, in order, and answers how many it put: it stops at the
// first that finds no room (answer.NoRoom). A failure after some were put
// answers those (the client sends the rest again, and is told then); one
// before any is the call's failure.
func (c *conn) Put(_ context.Context, queue string, items [][]byte, expirationMsec int32) (int32, error) {
	c.op = "put"
	if err := job.ValidateTopic(queue); err != nil {
		return 0, c.failure(fmt.Errorf("put: %w", err))
	}
	spec := job.Spec{Topic: queue, Priority: job.DefaultPriority, TTR: c.s.opts.DefaultTTR, Expires: expiry(expirationMsec)}
	put := int32(0)
	for i, item := range items {
		err := c.push(spec, item)
		switch {
		case err == nil: // put, or the queue's unique_from holds this item, and its job stands for it
			put++
		case answer.NoRoom(err):
			c.s.log.Debug("kestrel thrift: put stopped at an item with no room", "queue", queue, "put", put, "of", len(items), "err", err)
			return put, nil
		case put == 0:
			return 0, c.failure(fmt.Errorf("put to %q: %w", queue, err))
		default:
			c.s.log.Warn("kestrel thrift: put failed part way; answering what was put", "queue", queue,
				"put", put, "of", len(items), "err", fmt.Errorf("item %d: %w", i+1, err))
			return put, nil
		}
	}
	return put, nil
}

// push pushes one item of a put as spec says; an item the queue's
// unique_from holds counts as put (job.Standing).
func (c *conn) push(spec job.Spec, item []byte) error {
	if len(item) > c.s.opts.MaxItemSize {
		return fmt.Errorf("a %d-byte item, the limit is %d bytes: %w", len(item), c.s.opts.MaxItemSize, job.ErrTooBig)
	}
	spec.Body = string(item)
	_, err := job.Standing(c.s.d.Push(c.writeCtx(), spec))
	return err
}

// Get gives up to maxItems of queue, waiting up to timeoutMsec for them:
// removed as they are read (autoAbortMsec 0), or open reads (take, open).
func (c *conn) Get(ctx context.Context, queue string, maxItems, timeoutMsec, autoAbortMsec int32) ([]*wire.Item, error) {
	c.op = "get"
	if err := job.ValidateTopic(queue); err != nil {
		return nil, c.failure(fmt.Errorf("get: %w", err))
	}
	n, timeout := min(int(maxItems), maxGetItems), millis(timeoutMsec)
	if autoAbortMsec <= 0 {
		return c.take(ctx, queue, n, timeout)
	}
	return c.open(ctx, queue, n, timeout, millis(autoAbortMsec))
}

// take removes up to n items of queue as they come (a take gives one job
// at a time). Those it took are answered even if a later pop failed: they
// are gone from the queue.
func (c *conn) take(ctx context.Context, queue string, n int, timeout time.Duration) ([]*wire.Item, error) {
	items := []*wire.Item{} // never nil: a nil list is no answer at all
	err := c.gather(ctx, queue, n, timeout, dispatcher.Take, func(j *job.Job) {
		items = append(items, &wire.Item{Data: []byte(j.Body)})
	})
	switch {
	case c.hungUp():
		return nil, thrift.ErrAbandonRequest
	case err != nil && len(items) == 0:
		return nil, c.failure(fmt.Errorf("get from %q: %w", queue, err))
	case err != nil:
		c.s.log.Warn("kestrel thrift: get failed part way; answering what it took", "queue", queue, "took", len(items), "err", err)
	}
	return items, nil
}

// open reserves up to n items of queue as open reads, within the
// connection's MaxOpenReads there (none past it), each given back unless
// settled within autoAbort of the answer. They are held (touched) from
// their pop on; a get whose client hangs up gives back what it opened.
func (c *conn) open(ctx context.Context, queue string, n int, timeout, autoAbort time.Duration) ([]*wire.Item, error) {
	items := []*wire.Item{}
	if n = min(n, c.s.opts.MaxOpenReads-c.s.reads.count(c.id, queue)); n <= 0 {
		return items, nil
	}
	var ids []int64
	err := c.gather(ctx, queue, n, timeout, dispatcher.Reserve, func(j *job.Job) {
		id := c.s.reads.hold(c.id, queue, j)
		ids = append(ids, id)
		items = append(items, &wire.Item{Data: []byte(j.Body), ID: id})
	})
	if c.hungUp() {
		if _, err := c.s.reads.settle(c.writeCtx(), ids, dispatcher.ActionGiveBack); err != nil {
			c.s.log.Warn("kestrel thrift: giving back the reads of a get whose client went away failed; their TTRs will",
				"queue", queue, "err", err)
		}
		return nil, thrift.ErrAbandonRequest
	}
	c.s.reads.arm(ids, autoAbort)
	switch {
	case err != nil && len(items) == 0:
		return nil, c.failure(fmt.Errorf("get from %q: %w", queue, err))
	case err != nil:
		c.s.log.Warn("kestrel thrift: get failed part way; answering what it opened", "queue", queue, "opened", len(items), "err", err)
	}
	return items, nil
}

// gather pops up to n jobs of queue as keep says, handing each to got,
// until it has n or timeout has passed: each pop waits (holding no Redis
// connection) for the first of those still wanted, then takes what is
// ready. A pop that waited and found none ends it: the time is up (or the
// dispatcher's longest wait, [jobs] max_pop_timeout, is).
func (c *conn) gather(ctx context.Context, queue string, n int, timeout time.Duration, keep dispatcher.Keep, got func(*job.Job)) error {
	deadline := time.Now().Add(timeout)
	for have := 0; have < n; {
		wait := max(time.Until(deadline), 0)
		count := n - have
		if keep == dispatcher.Take {
			count = 1 // a take gives one job
		}
		pctx, cancel := context.WithTimeout(ctx, wait+c.s.opts.RequestTimeout)
		jobs, err := c.s.d.Pop(pctx, dispatcher.PopParams{Topics: []string{queue}, Timeout: wait, Count: count, Keep: keep})
		cancel()
		if err != nil || len(jobs) == 0 {
			return err
		}
		for _, j := range jobs {
			got(j)
		}
		have += len(jobs)
	}
	return nil
}

// Confirm acks the open reads ids name (any queue's, as kestrel: the id
// alone names a read) and answers how many it acked.
func (c *conn) Confirm(_ context.Context, _ string, ids []int64) (int32, error) {
	c.op = "confirm"
	return c.settle(ids, dispatcher.ActionAck)
}

// Abort gives the open reads ids name back to the heads of their queues
// and answers how many it gave back.
func (c *conn) Abort(_ context.Context, _ string, ids []int64) (int32, error) {
	c.op = "abort"
	return c.settle(ids, dispatcher.ActionGiveBack)
}

func (c *conn) settle(ids []int64, action dispatcher.Action) (int32, error) {
	n, err := c.s.reads.settle(c.writeCtx(), ids, action)
	if err != nil {
		return 0, c.failure(fmt.Errorf("%s: %w", c.op, err))
	}
	return int32(n), nil
}

// Peek answers queue's counts and its head item, left where it is. A
// queue gmq does not know is empty, as a new one is to kestrel.
func (c *conn) Peek(_ context.Context, queue string) (*wire.QueueInfo, error) {
	c.op = "peek"
	if err := job.ValidateTopic(queue); err != nil {
		return nil, c.failure(fmt.Errorf("peek: %w", err))
	}
	ctx, cancel := c.readCtx()
	defer cancel()
	head, err := c.s.d.Pop(ctx, dispatcher.PopParams{Topics: []string{queue}, Keep: dispatcher.Peek})
	if err != nil {
		return nil, c.failure(fmt.Errorf("peek at %q: %w", queue, err))
	}
	st, _, err := job.Found(c.s.d.Topic(queue).Stats(ctx))
	if err != nil {
		return nil, c.failure(fmt.Errorf("peek at %q: stats: %w", queue, err))
	}
	info := &wire.QueueInfo{Items: st.Ready, Bytes: st.Bytes, Waiters: int32(c.s.d.WaitingOn(queue)),
		OpenTransactions: int32(st.Reserved)}
	if len(head) > 0 {
		info.HeadItem, info.Age = []byte(head[0].Body), head[0].Age().Milliseconds()
	}
	return info, nil
}

// FlushQueue removes every item of queue, the open ones too.
func (c *conn) FlushQueue(_ context.Context, queue string) error {
	c.op = "flush_queue"
	return c.queueWrite(queue, dispatcher.Topic.Flush)
}

// DeleteQueue removes queue.
func (c *conn) DeleteQueue(_ context.Context, queue string) error {
	c.op = "delete_queue"
	return c.queueWrite(queue, dispatcher.Topic.Delete)
}

// queueWrite runs a flush or a delete of queue; a queue gmq does not know
// is no failure, as in kestrel.
func (c *conn) queueWrite(queue string, do func(dispatcher.Topic, context.Context) (int, error)) error {
	if err := job.ValidateTopic(queue); err != nil {
		return c.failure(fmt.Errorf("%s: %w", c.op, err))
	}
	if _, _, err := job.Found(do(c.s.d.Topic(queue), c.writeCtx())); err != nil {
		return c.failure(fmt.Errorf("%s %q: %w", c.op, queue, err))
	}
	return nil
}

// FlushAllQueues removes every item of every queue.
func (c *conn) FlushAllQueues(context.Context) error {
	c.op = "flush_all_queues"
	if _, err := c.s.d.FlushAll(c.writeCtx()); err != nil {
		return c.failure(fmt.Errorf("flush_all_queues: %w", err))
	}
	return nil
}

// wireStatus is kestrel's enum value of each status it names.
var wireStatus = map[job.Status]wire.Status{
	job.Up: wire.Status_UP, job.ReadOnly: wire.Status_READ_ONLY, job.Quiescent: wire.Status_QUIESCENT,
}

// CurrentStatus answers the status this broker announces; gmq's advisory
// writeavoid, which kestrel's enum does not name, is NOT_CONFIGURED, as
// kestrel answers it.
func (c *conn) CurrentStatus(context.Context) (wire.Status, error) {
	c.op = "current_status"
	if st, ok := wireStatus[c.s.d.Status().Announced()]; ok {
		return st, nil
	}
	return wire.Status_NOT_CONFIGURED, nil
}

// SetStatus sets the fleet's status, or with broker (a name GET
// /api/v1/status lists, or "this") that broker's own.
func (c *conn) SetStatus(_ context.Context, status wire.Status, broker string) error {
	c.op = "set_status"
	st, ok := job.Status(0), false
	for s, w := range wireStatus {
		if w == status {
			st, ok = s, true
		}
	}
	if !ok {
		return c.failure(fmt.Errorf("set_status: status %v: want UP, READ_ONLY or QUIESCENT: %w", status, job.ErrInvalid))
	}
	if err := c.s.d.Status().SetBroker(c.writeCtx(), broker, st); err != nil {
		return c.failure(fmt.Errorf("set_status %v: %w", status, err))
	}
	return nil
}

// GetVersion answers the server's version.
func (c *conn) GetVersion(context.Context) (string, error) {
	c.op = "get_version"
	return c.s.opts.Version, nil
}

// millis reads a call's milliseconds: none below 0, at most maxWait.
func millis(ms int32) time.Duration {
	return min(time.Duration(max(ms, 0))*time.Millisecond, maxWait)
}

// expiry is when a put's items expire: never for 0, else ms from now
// (less than 0: at once, as kestrel).
func expiry(ms int32) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return job.ExpiresIn(time.Duration(ms) * time.Millisecond)
}
