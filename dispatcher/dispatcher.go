// Package dispatcher is the broker's behaviour over the job store: it validates
// and routes jobs, runs the bucket timers, lets consumers wait for jobs (long
// poll) without holding a Redis connection each, and wakes them when jobs
// become ready here or on another broker sharing the Redis. The six front
// ends (HTTP, beanstalkd, JSON-RPC, kestrel's memcache, text and thrift)
// call it; it never formats for a wire.
package dispatcher

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gmq/gmq/bucket"
	"github.com/gmq/gmq/internal/egress"
	"github.com/gmq/gmq/job"
	"github.com/gmq/gmq/pool"
)

// Options tune a Dispatcher.
type Options struct {
	MaxBody        int           // bytes
	MaxPopTimeout  time.Duration // longest long-poll a consumer may ask for
	MaxWaiting     int           // most consumers waiting at once (0: no limit)
	MaxSchedules   int           // most cron schedules a PUT may make (0: no limit)
	BucketMaxSleep time.Duration // see bucket.Options.MaxSleep
	TopicsPerRound int           // see bucket.Options.TopicsPerRound
	StatusPoll     time.Duration // how often the shared server status is read
	// StatusGrace is how long a stricter status set through this broker is
	// announced before it is enforced ([server] status_grace).
	StatusGrace time.Duration
	// DefaultStatus is this broker's own status at boot ([server] default_status).
	DefaultStatus job.Status
	// MigrateAfter is how long after this broker first sees a newer store
	// format it begins to migrate (migrate.go; pool.DefaultAnnounceTTL when 0).
	MigrateAfter time.Duration
	// WaitingTTL is how long the mark that this broker has waiting consumers
	// on a topic lives without a refresh (refreshed every third of it).
	WaitingTTL time.Duration
	// HistoryEvery and HistoryKeep: see pool.AddHistory (0: no sampling).
	HistoryEvery time.Duration
	HistoryKeep  int
	// HistoryTopics is how many topics, the first of the listing (the
	// dashboard's first page), get a history of their own: see
	// sampleTopics (0: none).
	HistoryTopics int
	// DefaultTTR and DefaultPriority fill a scheduled job's TTR and
	// priority when its schedule leaves them out, as the front ends do for
	// a push ([jobs] default_ttr, default_priority).
	DefaultTTR      time.Duration
	DefaultPriority uint32
	// Egress is the hosts a topic's deliver_to may name ([webhook]
	// allow_hosts; nil or empty: none, delivery is off).
	Egress *egress.Policy
	Log    *slog.Logger
}

// Dispatcher is the broker core. Create it with New, start it with Run.
type Dispatcher struct {
	pool    Store
	opts    Options
	log     *slog.Logger
	buckets []*bucket.Bucket
	waiters *waitList
	ends    *endWaits                       // requests waiting for jobs' ends (WaitEnd)
	events  *eventHub                       // the buckets' event readers (Events)
	running atomic.Pointer[context.Context] // Run's context while it runs: the event readers' owner
	started time.Time

	status  statusState                         // see Status
	aliases atomic.Pointer[map[string][]string] // see SetAliases

	markMu sync.Mutex
	marked map[string]time.Time // topic -> when this broker last marked it as waited on

	watch     storeWatch // see checkStore
	migration migration  // see migrate

	totalsFailing atomic.Bool // the last write of the counted totals failed (flushTotals)
}

// New builds a dispatcher over p. Every option must be set (the defaults are
// config.Default's) but MaxWaiting (0: no limit) and Log.
func New(p Store, opts Options) *Dispatcher {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	d := &Dispatcher{pool: p, opts: opts, log: opts.Log, waiters: newWaitList(), ends: newEndWaits(), events: newEventHub(),
		marked: make(map[string]time.Time), started: time.Now()}
	d.buckets = make([]*bucket.Bucket, p.Buckets())
	for i := range d.buckets {
		d.buckets[i] = bucket.New(i, p, bucket.Options{MaxSleep: opts.BucketMaxSleep, TopicsPerRound: opts.TopicsPerRound, OnReady: d.waiters.notify, Log: opts.Log})
	}
	// A pop asks whether its topic has more ready jobs only to hand the
	// news on to a waiting consumer (handOn): with none waiting, it does not.
	p.SetWaiting(func() bool { return d.waiters.len() > 0 })
	p.OnFollowUpDue(d.nudge)             // a delayed follow-up its bucket's timer pushed: wake the timer of its own
	p.OnFollowUpsReady(d.waiters.notify) // an ack pushed its follow-ups: consumers waiting here look
	return d
}

// Run drives the bucket timers, the cross-broker wake-ups, the waiting
// marks, the shared status and the history samples until ctx ends; it
// returns when all of them have stopped.
func (d *Dispatcher) Run(ctx context.Context) {
	d.running.Store(&ctx)
	defer d.running.Store(nil)
	var wg sync.WaitGroup
	for _, b := range d.buckets {
		wg.Go(func() { b.Run(ctx) })
	}
	wg.Go(func() { d.listen(ctx) })
	wg.Go(func() { every(ctx, d.opts.WaitingTTL/3, d.refreshMarks) })
	wg.Go(func() { every(ctx, d.opts.StatusPoll, d.readStatus) })
	wg.Go(func() { every(ctx, d.opts.StatusPoll, d.checkStore) })
	wg.Go(func() { every(ctx, d.opts.StatusPoll, d.migrate) })
	wg.Go(func() { every(ctx, totalsEvery, d.flushTotals) })
	if d.opts.HistoryEvery > 0 {
		// Two looks an interval: a sample is at most half one late.
		wg.Go(func() { every(ctx, d.opts.HistoryEvery/2, d.sampleHistory) })
	}
	wg.Wait()
	d.stopStatusTimer()
	d.waiters.stopOpenings()
	// The last totals: the front ends stopped before the dispatcher does
	// (broker.Run), so nothing is counted after this.
	last, cancel := context.WithTimeout(context.Background(), totalsEvery)
	defer cancel()
	d.flushTotals(last)
}

// totalsEvery is how often the totals the pool counts are written
// (pool.FlushTotals): a stats read on another broker lags at most this,
// and a broker killed loses at most this much of its totals.
const totalsEvery = time.Second

// flushTotals writes the totals the pool counted (Run's chore). A failure
// is logged when it begins and when it ends, not each second while Redis
// is down.
func (d *Dispatcher) flushTotals(ctx context.Context) {
	err := d.pool.FlushTotals(ctx)
	switch failing := d.totalsFailing.Load(); {
	case err != nil && !failing:
		d.totalsFailing.Store(true)
		d.log.Warn("writing the counted totals failed; they are kept, and tried again each second", "err", err)
	case err == nil && failing:
		d.totalsFailing.Store(false)
		d.log.Info("the counted totals are written again")
	}
}

// every calls chore each interval until ctx ends: the dispatcher's periodic
// work, each in a goroutine of Run's.
func every(ctx context.Context, interval time.Duration, chore func(context.Context)) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		chore(ctx)
	}
}

// listen receives other brokers' wake-ups, resubscribing after failures.
func (d *Dispatcher) listen(ctx context.Context) {
	backoff := 50 * time.Millisecond
	for ctx.Err() == nil {
		err := d.pool.Subscribe(ctx, d.resubscribed, d.woken)
		if err == nil {
			return
		}
		d.log.Warn("wake-up subscription lost; resubscribing", "in", backoff, "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// woken acts on a wake-up: a job made ready wakes a waiting consumer, a
// job's end the requests waiting for it, a bucket's follow-ups due its
// timer.
func (d *Dispatcher) woken(w pool.Wake) {
	if w.FollowUpsDue {
		if w.Bucket < len(d.buckets) {
			d.buckets[w.Bucket].Nudge(time.Now()) // notices to hand over: now, not at its next round
		}
		return
	}
	if w.Ended != 0 {
		d.ends.ended(w.Ended, w.How)
		return
	}
	d.waiters.notify(w.Topic, w.N)
}

// resubscribed makes every waiting consumer and every wait for a job's end
// look again: wake-ups may have been missed while the subscription was down.
func (d *Dispatcher) resubscribed() {
	d.waiters.notifyAll()
	d.ends.lookAgain()
}

// refreshMarks keeps the waiting marks of topics with waiting consumers
// alive (Run calls it every third of their TTL).
func (d *Dispatcher) refreshMarks(ctx context.Context) {
	topics := d.waiters.topics()
	if err := d.mark(ctx, topics, true); err != nil && ctx.Err() == nil {
		d.log.Warn("refreshing waiting marks failed", "err", err)
	}
	d.forgetMarks(topics)
}

// mark tells other brokers that consumers wait here on topics, unless that was
// said recently enough (or always, with force).
func (d *Dispatcher) mark(ctx context.Context, topics []string, force bool) error {
	now := time.Now()
	for _, t := range topics {
		d.markMu.Lock()
		fresh := now.Sub(d.marked[t]) < d.opts.WaitingTTL/3
		d.markMu.Unlock()
		if fresh && !force {
			continue
		}
		if err := d.pool.MarkWaiting(ctx, t, d.opts.WaitingTTL); err != nil {
			if errors.Is(err, job.ErrOutOfMemory) {
				// A mark is a write, which Redis refuses at maxmemory: the
				// wait goes on without it (this broker's pushes and timers
				// still wake it; other brokers' pushes are refused there
				// too), and a pop still answers "nothing" when its time is up.
				continue
			}
			return err
		}
		d.markMu.Lock()
		d.marked[t] = now
		d.markMu.Unlock()
	}
	return nil
}

// forgetMarks drops the record of marks for topics nobody waits on any more.
func (d *Dispatcher) forgetMarks(waited []string) {
	keep := make(map[string]bool, len(waited))
	for _, t := range waited {
		keep[t] = true
	}
	d.markMu.Lock()
	defer d.markMu.Unlock()
	for t := range d.marked {
		if !keep[t] {
			delete(d.marked, t)
		}
	}
}

// nudge makes the timer of topic's bucket wake by due.
func (d *Dispatcher) nudge(topic string, due, now time.Time) {
	// due is on Redis's clock; the timer sleeps on ours, so go by the distance.
	d.buckets[d.pool.BucketOf(topic)].Nudge(time.Now().Add(due.Sub(now)))
}
