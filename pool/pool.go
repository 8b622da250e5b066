// Package pool is gmq's job store: every Redis key and every
// script call. Each state change of a job is one Lua script (package lua), so a
// crash of the broker at any instant leaves every job in exactly one state.
// No other package talks to Redis.
package pool

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/gmq/gmq/job"
	"github.com/gmq/gmq/lua"
)

// Options configure a Pool.
type Options struct {
	Prefix    string // key prefix, e.g. "gmq"
	Buckets   int    // fixed per deployment; checked against Redis by Init
	Origin    string // this broker's id, sent with wake-ups so it can skip its own
	TickBatch int    // most due jobs one tick script moves
	// AliasGrace is how long a client id's claim may wait for its job before a
	// new push may take the id over (a claim whose push crashed); a push
	// takes milliseconds between the two steps.
	AliasGrace time.Duration
	// TopicCache is how many job ids the pool remembers the topic of.
	TopicCache int
	// MaxOpsPerCall is the most pushes, pops and acks of one bucket that go
	// in one script call (batch.go); 1 turns batching off. BatchSlots is how
	// many such calls a bucket has in flight at once.
	MaxOpsPerCall, BatchSlots int
	// WaitReplicas, when over 0, holds a push's answer until that many
	// replicas have it, for at most WaitTimeout (replicate.go).
	WaitReplicas int
	WaitTimeout  time.Duration
	// Version is the broker's, recorded with it in the store (format.go).
	Version string
	// AnnounceTTL is how long the broker's record lasts unless renewed
	// (DefaultAnnounceTTL when 0); ReadsFormat, when over 0, plays a broker
	// that reads formats up to it (tests).
	AnnounceTTL time.Duration
	ReadsFormat int
	// BatchRetention is how long a finished batch is kept
	// (DefaultBatchRetention when 0).
	BatchRetention time.Duration
}

// Pool is the job store over one Redis (or Redis Cluster) client.
type Pool struct {
	client      rueidis.Client
	opts        Options
	keys        keys
	ids         idBlocks
	topicOf     *topicCache
	batchers    []*batcher  // one per bucket
	plainTopics plainTopics // topics whose pops go through batch.lua for now (plain.go)
	oneNode     atomic.Bool // not a Cluster: one call may name every bucket's keys (popBestPlain)
	batchCounts batchCounts
	totals      *totals      // the batch calls' totals, until FlushTotals writes them
	leftAliases atomic.Int64 // see dropAlias
	// refusedExpired counts expired jobs their expire_to topic refused (moveExpired).
	refusedExpired atomic.Int64
	fanout         fanoutCache
	uniqueBody     uniqueBodyCache
	epoch          atomic.Pointer[string]                                 // gmq:meta's epoch at the last Init (epoch.go)
	guard          formatGuard                                            // the store's format when newer than this pool reads (format.go)
	format         atomic.Int64                                           // the store's format at the last Announce: the one the scripts write (format.go)
	callerArg      atomic.Pointer[string]                                 // the scripts' ARGV[1] for that format (caller)
	waiting        atomic.Pointer[func() bool]                            // says whether consumers wait here (SetWaiting; askMore)
	batchObserver  atomic.Pointer[func(ops int)]                          // see ObserveBatches
	followUpDue    atomic.Pointer[func(topic string, due, now time.Time)] // see OnFollowUpDue
	followUpReady  atomic.Pointer[func(topic string, n int)]              // see OnFollowUpsReady
	owned          bool                                                   // the client is the pool's to close (Open)
	// maxBatchMembers is job.MaxBatchMembers, lowered by tests that fill
	// a batch without pushing a hundred thousand jobs.
	maxBatchMembers int
}

// The topic-scoped scripts are functions of gmq's library (function.go),
// loaded once; the few standalone ones are scripts, built once, which
// rueidis runs with EVALSHA, falling back to EVAL.
var (
	batchScript         = newFunction("batch")
	batchFreeScript     = newFunction("batch" + lua.FreeSuffix) // a batch without pushes: allow-oom
	releaseScript       = newFunction("release")
	buryScript          = newFunction("bury")
	touchScript         = newFunction("touch")
	cancelScript        = newFunction("cancel")
	progressScript      = newFunction("progress")
	kickJobScript       = newFunction("kick_job")
	updateJobScript     = newFunction("update_job")
	noteHeldScript      = newFunction("note_held")
	reserveJobScript    = newFunction("reserve_job")
	kickScript          = newFunction("kick")
	tickScript          = newFunction("tick")
	dueTopicsScript     = rueidis.NewLuaScript(lua.Source("due_topics"))
	addTotalsScript     = rueidis.NewLuaScript(lua.Source("add_totals"))
	peekScript          = newFunction("peek")
	endWaitScript       = newFunction("end_wait")
	peekTopicScript     = newFunction("peek_topic")
	topicStatsScript    = newFunction("topic_stats")
	pauseScript         = newFunction("pause")
	forgetTopicScript   = newFunction("forget_topic")
	purgeScript         = newFunction("purge")
	expireScript        = newFunction("expire")
	referenceScript     = newFunction("reference")
	failScript          = newFunction("fail")
	deadRetryScript     = newFunction("dead_retry")
	jobListScript       = newFunction("job_list")
	historyScript       = rueidis.NewLuaScript(lua.Source("history"))
	outboxScript        = newFunction("outbox")
	followupsScript     = newFunction("followups")
	depsScript          = newFunction("deps")
	batchesScript       = newFunction("batches")
	settingsScript      = rueidis.NewLuaScript(lua.Source("settings"))
	topicPatternsScript = rueidis.NewLuaScript(lua.Source("topic_patterns"))
	claimAliasScript    = rueidis.NewLuaScript(lua.Source("claim_alias"))
	dropAliasScript     = rueidis.NewLuaScript(lua.Source("drop_alias"))
)

// New returns a Pool over client. Call Init before use. Every option must be
// set (the defaults are config.Default's).
func New(client rueidis.Client, opts Options) *Pool {
	k := newKeys(opts.Prefix, opts.Buckets)
	p := &Pool{opts: opts, keys: k, ids: idBlocks{key: k.ids(), size: 1000, floorRate: idFloorRate(opts.Buckets)},
		topicOf: newTopicCache(opts.TopicCache), batchers: make([]*batcher, opts.Buckets), maxBatchMembers: job.MaxBatchMembers, totals: newTotals(opts.Buckets)}
	p.client = guardedClient{Client: client, p: p}
	p.oneNode.Store(client.Mode() != rueidis.ClientModeCluster)
	for b := range p.batchers {
		p.batchers[b] = &batcher{pool: p, bucket: b}
	}
	return p
}

// Init records the bucket count in a fresh Redis, or checks it against the
// one recorded: jobs are placed by bucket, so the count cannot change under
// existing data. It also records how topics are placed (checkPlacement) and
// the store's epoch (epoch.go), and rebuilds a topic index that disagrees
// with its set (topicindex.go). Run again after EpochChanged, it makes the
// record anew.
func (p *Pool) Init(ctx context.Context) error {
	// Totals counted and not written belong to the store as it was: after a
	// data loss, not to the one recorded anew (totals.go).
	p.totals.dropAll()
	// First: a store newer than this broker reads is not written to.
	if _, err := p.Announce(ctx); err != nil {
		return fmt.Errorf("init: %w", err)
	}
	want := strconv.Itoa(p.opts.Buckets)
	if err := p.client.Do(ctx, p.client.B().Hsetnx().Key(p.keys.meta()).Field("buckets").Value(want).Build()).Error(); err != nil {
		return wrapRedis("init", err)
	}
	got, err := p.client.Do(ctx, p.client.B().Hget().Key(p.keys.meta()).Field("buckets").Build()).ToString()
	if err != nil {
		return wrapRedis("init", err)
	}
	if got != want {
		return fmt.Errorf("init: %w: this Redis holds gmq data with %s buckets, the configuration says %s (set [redis] buckets = %s or use another prefix)",
			job.ErrInvalid, got, want, got)
	}
	// A node down now (one of a cluster's) is given the library when it
	// answers a call without it (function.Exec); none at all is an error.
	if loaded, err := loadLibrary(ctx, p.client); loaded == 0 && err != nil {
		return fmt.Errorf("init: %w (gmq's scripts are a library of Redis Functions: Redis 7 or later, and a user allowed FUNCTION LOAD)", err)
	}
	if err := p.initEpoch(ctx); err != nil {
		return err
	}
	if err := p.checkPlacement(ctx); err != nil {
		return err
	}
	return p.checkTopicIndex(ctx)
}

// Buckets is the number of buckets.
func (p *Pool) Buckets() int { return p.opts.Buckets }

// BucketOf is the bucket a topic's jobs live in.
func (p *Pool) BucketOf(topic string) int { return p.keys.bucketOf(topic) }

// Ping checks that Redis answers.
func (p *Pool) Ping(ctx context.Context) error {
	return wrapRedis("ping", p.client.Do(ctx, p.client.B().Ping().Build()).Error())
}

// Pushed says where a new job went.
type Pushed struct {
	ID  uint64
	Due time.Time // zero when the job is ready at once
	Now time.Time // Redis's clock at the push
	// Kept is false when the topic is fanout_only: its children got copies,
	// the topic itself holds no job with ID.
	Kept bool
	// Children are the topic's fanout children, each sent a copy (unless
	// its own limits refused it).
	Children []string
	// Unique is what a unique push did to the waiting job that held its
	// key: "replaced" or "debounced" (ID is then that job's), or "".
	Unique   string
	ClientID string // with Unique: the changed job's client id
}

// Push stores a new job. A client id that a live job already has gives
// ErrDuplicate and leaves that job untouched.
func (p *Pool) Push(ctx context.Context, j job.Spec) (Pushed, error) {
	seqs, err := p.ids.next(ctx, p.client, 1)
	if err != nil {
		return Pushed{}, wrapRedis("push: allocate id", err)
	}
	return p.push(ctx, j, seqs[0], scheduleFire{})
}

// PushBatch stores jobs as Push does, at once, so that they share script
// calls. Their numbers are taken in the batch's order, so jobs of one topic
// and priority are popped in that order. A batch with grouped jobs is
// queued for the scripts in its order too (each push waits for the one
// before it to be queued, not stored), so groups first seen in it take
// their turns in the batch's order. It returns each job's outcome.
func (p *Pool) PushBatch(ctx context.Context, jobs []job.Spec) ([]Pushed, []error) {
	out := make([]Pushed, len(jobs))
	errs := make([]error, len(jobs))
	seqs, err := p.ids.next(ctx, p.client, len(jobs))
	if err != nil {
		for i := range errs {
			errs[i] = wrapRedis("push: allocate id", err)
		}
		return out, errs
	}
	ordered := slices.ContainsFunc(jobs, func(j job.Spec) bool { return j.Group != "" })
	var wg sync.WaitGroup
	for i, j := range jobs {
		if !ordered {
			wg.Go(func() { out[i], errs[i] = p.push(ctx, j, seqs[i], scheduleFire{}) })
			continue
		}
		queued := make(chan struct{})
		var once sync.Once
		signal := func() { once.Do(func() { close(queued) }) }
		wg.Go(func() {
			defer signal() // a push that ends before it is queued lets the next one go
			out[i], errs[i] = p.push(context.WithValue(ctx, queuedKey{}, signal), j, seqs[i], scheduleFire{})
		})
		<-queued
	}
	wg.Wait()
	return out, errs
}

// queuedKey is a context value: a function a batched operation calls once
// it is in its batcher's queue (PushBatch's order).
type queuedKey struct{}

// push stores job j under sequence number seq; fire, when its key is
// set, makes it a schedule's fire (schedules.go).
func (p *Pool) push(ctx context.Context, j job.Spec, seq uint64, fire scheduleFire) (Pushed, error) {
	b := p.keys.bucketOf(j.Topic)
	id := seq*uint64(p.opts.Buckets) + uint64(b)
	m := member(id)
	if j.ClientID != "" {
		if err := p.claimAlias(ctx, j.ClientID, m); err != nil {
			return Pushed{}, err
		}
	}
	told := time.Now()
	after, err := p.dependOn(ctx, j, m)
	if err == nil && len(j.After) > 0 && time.Since(told) > depPushWithin {
		err = fmt.Errorf("push to %q: %w: telling its dependencies took %v", j.Topic, job.ErrUnavailable, time.Since(told).Round(time.Second))
	}
	if err != nil {
		p.dropAlias(ctx, j.ClientID, id) // claimed for a job that will not be
		return Pushed{}, err
	}
	reply, children, err := p.pushOp(ctx, b, j, m, fire, after)
	if err != nil {
		return Pushed{}, err
	}
	switch reply.Status {
	case replyFired:
		return Pushed{}, errFiredElsewhere
	case replySkipped:
		return Pushed{}, errSkipped
	}
	if got, settled, err := p.uniqueOutcome(j, reply); settled {
		p.dropAlias(ctx, j.ClientID, id) // claimed for a job that will not be
		return got, err
	}
	switch status := reply.Status; status {
	case replyOK:
	case replyAfterFanout:
		p.dropAlias(ctx, j.ClientID, id)
		if len(j.After) == 0 { // a batch's job
			return Pushed{}, errBatchFanout(j.Topic)
		}
		return Pushed{}, errAfterFanout(j.Topic)
	case replyGroupBacklog:
		p.dropAlias(ctx, j.ClientID, id)
		return Pushed{}, fmt.Errorf("push to %q: %w: its first grouped job, and it holds %d ready jobs without a group (at most %d can join the group \"\" at once): let them drain first, or use another topic",
			j.Topic, job.ErrConflict, reply.Ungrouped, reply.Most)
	case replyFull, replyTooBig:
		p.dropAlias(ctx, j.ClientID, id) // claimed for a job that will not be
		if status == replyFull {
			return Pushed{}, fmt.Errorf("push to %q: %w: its %s is %d", j.Topic, job.ErrFull, reply.Limit, reply.Max)
		}
		return Pushed{}, fmt.Errorf("push to %q: %w: %d bytes, its max_item_size is %d", j.Topic, job.ErrTooBig, len(j.Body), reply.Max)
	default:
		return Pushed{}, fmt.Errorf("push: id %d is taken (%s): the id counter %s went back: %w", id, status, p.keys.ids(), errTaken)
	}
	p.dropAliases(ctx, reply.Dropped) // the jobs discarded to make room
	kept := reply.Kept
	if kept {
		p.topicOf.put(id, j.Topic)
	} else {
		p.dropAlias(ctx, j.ClientID, id) // fanout_only: the topic holds no job of that id
	}
	now, due := reply.Now, reply.Due
	out := Pushed{ID: id, Now: time.UnixMilli(now), Kept: kept, Children: children}
	if due > 0 {
		out.Due = time.UnixMilli(due)
	}
	return out, nil
}

// errTaken is a push whose number is taken: the id counter went back, or a
// follow-up was pushed before (followups.go).
var errTaken = errors.New("the number is taken")

// pushOp runs a push of j as member m in bucket b, with a copy for each of
// the topic's fanout children, each under a number of its own. The pool's
// list of the children may be stale: the script then names the current
// ones, and the push is asked again with them. It returns the reply and the
// children the push was made with.
func (p *Pool) pushOp(ctx context.Context, b int, j job.Spec, m string, fire scheduleFire, after string) (pushReply, []string, error) {
	if err := p.checkChild(ctx, j.Topic, false); err != nil {
		return pushReply{}, nil, fmt.Errorf("push: %w", err)
	}
	if (len(j.Then) > 0 || len(j.OnDead) > 0) && p.Format() < FollowUpFormat {
		return pushReply{}, nil, fmt.Errorf("push: then, on_dead: %w", ErrFollowUpsNeedFormat)
	}
	children := p.fanout.get(j.Topic)
	byBody := p.uniqueBody.get(j.Topic)
	thenList, _, err := p.followUpEntries(ctx, j.Then)
	if err != nil {
		return pushReply{}, nil, fmt.Errorf("push: then: %w", err)
	}
	deadList, _, err := p.followUpEntries(ctx, j.OnDead)
	if err != nil {
		return pushReply{}, nil, fmt.Errorf("push: on_dead: %w", err)
	}
	for range 5 {
		key, mode, window := p.uniqueArgs(j, byBody)
		args := lua.OpArgs(opPush, "member", m, "priority", strconv.FormatUint(uint64(j.Priority), 10),
			"ttr", strconv.FormatInt(millis(j.TTR), 10), "delay", strconv.FormatInt(millis(j.Delay), 10),
			"body", j.Body, "client_id", j.ClientID, "expires", strconv.FormatInt(epochMillis(j.Expires), 10),
			"retry", j.Retry.Encode(), "trace", j.TraceParent,
			"unique_key", "", "unique_mode", mode, "unique_for", window, "group", j.Group,
			"schedule_key", "", "schedule_due", "", "schedule_next", "", "schedule_name", "", "overlap", "",
			"json", flag(j.BodyJSON), "keep", keepArg(j.KeepCompleted), "timeout", timeoutArg(j.Timeout),
			"then_list", thenList, "dead_list", deadList, "after", after, "batch", batchArg(j))
		if len(children) > 0 {
			seqs, err := p.ids.next(ctx, p.client, len(children))
			if err != nil {
				return pushReply{}, nil, wrapRedis("push: allocate id", err)
			}
			for _, seq := range seqs {
				args = append(args, member(seq*uint64(p.opts.Buckets)+uint64(b)))
			}
		}
		o := &op{kind: opPush, topics: append([]string{j.Topic}, children...), args: args,
			keys: []string{key, fire.key}, keyArgs: []int{uniqueKeyArg, scheduleKeyArg},
		}
		o.plain = plainPush(o.topics, o.args, key, fire.key)
		if fire.key != "" {
			copy(o.args[scheduleDueArg:], []string{fire.due, fire.next, fire.name, fire.overlap})
		}
		raw, err := p.batchOp(ctx, b, o)
		if err != nil {
			return pushReply{}, nil, wrapRedis("push", err)
		}
		reply := decodePushReply(raw)
		switch reply.Status {
		case replyUniqueFrom:
			byBody = reply.From == "body"
			p.uniqueBody.set(j.Topic, byBody)
			continue
		case replyChildren:
		default:
			return reply, children, nil
		}
		children = append(children[:0:0], reply.Children...)
		p.fanout.set(j.Topic, children)
	}
	return pushReply{}, nil, fmt.Errorf("push to %q: %w: its fanout children or its unique_from kept changing", j.Topic, job.ErrBusy)
}

// RefusedExpired is how many expired jobs this pool dropped because their
// expire_to topic refused them (full, or the body too big for it).
func (p *Pool) RefusedExpired() int64 { return p.refusedExpired.Load() }

// idBlocks hands out job sequence numbers from blocks taken off one Redis
// counter, so numbering costs one round trip per block, not per job, and ids
// grow in push order within a broker. A missing counter starts at a floor
// that grows with time, so numbers never repeat when Redis loses its data
// (epoch.go).
type idBlocks struct {
	key       string
	size      uint64
	floorRate int64 // see idFloorRate

	mu        sync.Mutex
	next_, hi uint64
}

// next takes n sequence numbers, in order (not always contiguous: a block
// may run out part way).
func (b *idBlocks) next(ctx context.Context, c rueidis.Client, n int) ([]uint64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]uint64, n)
	for i := range out {
		if b.next_ == 0 || b.next_ > b.hi {
			hi, err := nextIDsScript.Exec(ctx, c, []string{b.key}, lua.Args("next_ids", "block", strconv.FormatUint(b.size, 10),
				"floor_from", strconv.FormatInt(idFloorStart, 10), "per_ms", strconv.FormatInt(b.floorRate, 10))).AsUint64()
			if err != nil {
				return nil, err
			}
			b.next_, b.hi = hi-b.size+1, hi
		}
		out[i] = b.next_
		b.next_++
	}
	return out, nil
}

// timeoutArg is a push's handler timeout in ms ("" none).
func timeoutArg(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	return strconv.FormatInt(millis(d), 10)
}

// keepArg is a push's own keep_completed in whole seconds, rounded up (""
// for none: its topic's).
func keepArg(keep *time.Duration) string {
	if keep == nil {
		return ""
	}
	return strconv.FormatInt(int64((*keep+time.Second-1)/time.Second), 10)
}
