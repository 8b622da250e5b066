package pool

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/gmq/gmq/lua"
)

// A batcher gathers the pushes, pops and acks of one bucket into one script
// call (lua/batch.lua), group-commit style. A call that finds a free slot runs
// at once, with whatever is queued; calls that arrive while every slot is
// busy queue, and the next batch takes them all. Under light load each
// operation is its own call, with no added wait; under load one call carries
// many operations, and Redis pays the overhead of a script call, and the
// writes of counters and wake-ups, once per batch instead of once per job.
//
// There is no goroutine of its own: the caller that takes a slot runs the
// batch, and when it is done hands the slot to the first queued caller that
// has not been handed one, or frees it.
type batcher struct {
	pool   *Pool
	bucket int

	mu      sync.Mutex
	queue   []*op
	running int // slots taken: batches in flight, or handed on and about to run

	plain plainGate // whether a lone plain operation takes the plain path (plain.go)
}

// op is one operation of a batch (its kind and arguments as lua/batch.lua
// reads them) and, once its batch ran, its reply.
type op struct {
	ctx    context.Context
	kind   string
	topics []string // the topics whose keys it needs, the job's first
	args   []string
	// keys are more keys the operation needs (a unique push's key, a
	// schedule's hash): encode passes each after the topics' and puts its
	// place in KEYS in the argument keyArgs says ("" keys are left out).
	keys    []string
	keyArgs []int
	queued  func() // when not nil, called once the operation is queued (PushBatch keeps its order)
	// plain, for a plain push, pop or ack, is its call on the plain path
	// (plain.go), which a batch of it alone takes.
	plain *plainCall

	reply []rueidis.RedisMessage // decoded by the caller's shape (replies_gen.go)
	err   error
	led   bool      // handed a slot (under the batcher's lock)
	wake  chan bool // true: run the next batch; false: reply and err are set
}

// BatchStats counts this pool's batched operations and the script calls
// that carried them; their ratio is the average batch.
type BatchStats struct {
	Calls, Ops int64
}

// batchCounts are BatchStats, kept atomically.
type batchCounts struct {
	calls, ops atomic.Int64
}

// ObserveBatches calls fn with the number of operations of each batched
// script call from now on (nil stops it), from the goroutine that makes
// the call: fn must be quick.
func (p *Pool) ObserveBatches(fn func(ops int)) {
	if fn == nil {
		p.batchObserver.Store(nil)
		return
	}
	p.batchObserver.Store(&fn)
}

// BatchStats says how many pushes, pops and acks went to Redis in how many
// script calls since the pool was made.
func (p *Pool) BatchStats() BatchStats {
	return BatchStats{Calls: p.batchCounts.calls.Load(), Ops: p.batchCounts.ops.Load()}
}

// batch runs one operation on bucket b through its batcher and returns the
// operation's own reply.
func (p *Pool) batch(ctx context.Context, b int, kind string, topics []string, args ...string) ([]rueidis.RedisMessage, error) {
	return p.batchOp(ctx, b, &op{ctx: ctx, kind: kind, topics: topics, args: args})
}

// batchOp is batch for an operation built by its caller.
func (p *Pool) batchOp(ctx context.Context, b int, o *op) ([]rueidis.RedisMessage, error) {
	o.ctx = ctx
	o.queued, _ = ctx.Value(queuedKey{}).(func())
	if p.opts.MaxOpsPerCall == 1 {
		if o.queued != nil {
			o.queued()
		}
		p.batchers[b].run([]*op{o})
		return o.reply, o.err
	}
	return p.batchers[b].do(o)
}

func (bt *batcher) do(o *op) ([]rueidis.RedisMessage, error) {
	o.wake = make(chan bool, 2) // at most one hand-over and the result
	bt.mu.Lock()
	bt.queue = append(bt.queue, o)
	if o.queued != nil {
		o.queued()
	}
	lead := bt.running < bt.pool.opts.BatchSlots
	if lead {
		bt.running++
		o.led = true
	}
	bt.mu.Unlock()
	for {
		if lead {
			bt.serve()
		}
		if lead = <-o.wake; !lead {
			return o.reply, o.err
		}
	}
}

// serve runs one batch from the head of the queue (not always holding the
// caller's own operation: another slot may have taken it), then hands the slot on.
func (bt *batcher) serve() {
	bt.mu.Lock()
	n := min(len(bt.queue), bt.pool.opts.MaxOpsPerCall)
	batch := make([]*op, n)
	copy(batch, bt.queue)
	rest := copy(bt.queue, bt.queue[n:])
	clear(bt.queue[rest:]) // hold no finished operation
	bt.queue = bt.queue[:rest]
	bt.mu.Unlock()

	if n > 0 {
		bt.run(batch)
		for _, o := range batch {
			o.wake <- false
		}
	}

	bt.mu.Lock()
	var next *op
	for _, o := range bt.queue {
		if !o.led {
			next = o
			break
		}
	}
	if next != nil {
		next.led = true
	} else {
		bt.running--
	}
	bt.mu.Unlock()
	if next != nil {
		next.wake <- true
	}
}

// run makes the script call for ops and sets each one's reply or error.
// Operations whose caller already gave up are left out.
func (bt *batcher) run(ops []*op) {
	live := make([]*op, 0, len(ops))
	for _, o := range ops {
		if err := o.ctx.Err(); err != nil {
			o.err = err
			continue
		}
		live = append(live, o)
	}
	if len(live) == 0 {
		return
	}
	bt.pool.countCall(len(live))
	ctx, cancel := batchContext(live)
	defer cancel()
	var client rueidis.Client = bt.pool.client
	var wait *waitClient
	script := batchFreeScript // nothing to refuse at maxmemory: acks and pops free memory
	if holdsPush(live) {
		script = batchScript
		if bt.pool.opts.WaitReplicas > 0 {
			wait = bt.pool.newWaitClient()
			client = wait
		}
	}
	call := func(script *function, keys, args []string) ([][]rueidis.RedisMessage, error) {
		return execBatch(ctx, script, client, keys, args)
	}
	var replies [][]rueidis.RedisMessage
	var err error
	done := false
	if len(live) == 1 {
		replies, err, done = bt.tryPlain(call, live[0])
	}
	if !done {
		keys, args := bt.encode(live)
		replies, err = call(script, keys, args)
	}
	var unconfirmed error // the pushes' replicas did not confirm them
	if wait != nil && err == nil {
		unconfirmed = wait.shortfall()
	}
	for err == nil && len(replies) > len(live) {
		// After the replies: the totals the call left to the broker
		// (totals.go), and the client ids of expired jobs the pops met.
		extra := decodeBatchExtraReply(replies[len(replies)-1])
		switch extra.Status {
		case replyTotals:
			err = bt.pool.totals.add(bt.bucket, extra)
		case replyDropped:
			bt.pool.dropAliases(ctx, extra.Expired)
		default:
			err = fmt.Errorf("batch: %d replies for %d operations", len(replies), len(live))
		}
		replies = replies[:len(replies)-1]
	}
	if err == nil && len(replies) != len(live) {
		err = fmt.Errorf("batch: %d replies for %d operations", len(replies), len(live))
	}
	for i, o := range live {
		if err != nil {
			o.err = err
			continue
		}
		o.reply = replies[i]
		if unconfirmed != nil && o.kind == opPush && changedByPush[decodeStatusReply(o.reply).Status] {
			o.reply, o.err = nil, unconfirmed
		}
	}
}

// countCall counts a script call of ops operations (gmq_batch_operations).
func (p *Pool) countCall(ops int) {
	p.batchCounts.calls.Add(1)
	p.batchCounts.ops.Add(int64(ops))
	if observe := p.batchObserver.Load(); observe != nil {
		(*observe)(ops)
	}
}

// execBatch makes a batch's script call. The command builder panics on a
// mistake of gmq's own (keys of several Cluster slots in one call): that
// panic becomes the batch's error, because the callers of every operation
// in the batch, and of every one queued behind it, wait on this goroutine,
// and a panic that left it would leave them waiting for ever.
func execBatch(ctx context.Context, script *function, client rueidis.Client, keys, args []string) (replies [][]rueidis.RedisMessage, err error) {
	defer func() {
		if r := recover(); r != nil {
			replies, err = nil, fmt.Errorf("batch call not made: %v", r)
		}
	}()
	list, err := script.Exec(ctx, client, keys, args).ToArray()
	if err != nil {
		return nil, err
	}
	return decodeRepliesReply(list).Replies, nil
}

// changedByPush are the replies of a push that wrote a job: a new one, or
// a waiting one a unique push changed (wait_replicas waits for both).
var changedByPush = map[string]bool{replyOK: true, replyReplaced: true, replyDebounced: true}

// holdsPush says whether ops store a job: the operations that wait_replicas
// waits for (replicate.go). A pop, ack or delete undone by a failover
// delivers a job again; a push undone loses it.
func holdsPush(ops []*op) bool {
	for _, o := range ops {
		if o.kind == opPush {
			return true
		}
	}
	return false
}

// encode lays out ops as lua/batch.lua reads them: each topic's keys once.
func (bt *batcher) encode(ops []*op) (keys, args []string) {
	index := make(map[string]string, 4)
	var names []string
	for _, o := range ops {
		for _, t := range o.topics {
			if _, ok := index[t]; !ok {
				names = append(names, t)
				index[t] = strconv.Itoa(len(names))
			}
		}
	}
	keys = bt.pool.keys.withTopics(bt.bucket, names...)
	args = lua.AppendArgs(append(make([]string, 0, 2+len(names)+len(ops)*10), bt.pool.caller()), "batch",
		"n", strconv.Itoa(len(names)))
	args = append(args, names...) // topics...: then the operations (lua.Ops)
	for _, o := range ops {
		args = append(args, o.kind, strconv.Itoa(len(o.topics)))
		for _, t := range o.topics {
			args = append(args, index[t])
		}
		at := len(args)
		args = append(args, o.args...)
		for i, k := range o.keys {
			if k != "" {
				keys = append(keys, k)
				args[at+o.keyArgs[i]] = strconv.Itoa(len(keys))
			}
		}
	}
	return keys, args
}

// batchContext is the context a batch runs in. One caller giving up must not
// cancel the others' operations, so it is cancelled by none of theirs and
// ends at the latest of their deadlines (with none if one has none).
func batchContext(ops []*op) (context.Context, context.CancelFunc) {
	var latest time.Time
	for _, o := range ops {
		d, ok := o.ctx.Deadline()
		if !ok {
			return context.WithoutCancel(o.ctx), func() {}
		}
		if d.After(latest) {
			latest = d
		}
	}
	return context.WithDeadline(context.WithoutCancel(ops[0].ctx), latest)
}
