package dispatcher

import (
	"context"
	"errors"
	"time"

	"github.com/gmq/gmq/job"
	"github.com/gmq/gmq/pool"
)

// ServerStats describe the whole deployment (counts in Redis) as seen by this
// broker (uptime, waiting consumers).
type ServerStats struct {
	job.Counters
	Uptime   time.Duration
	Waiting  int // consumers waiting in a long poll on this broker
	EndWaits int // requests waiting for a job's end on this broker (WaitEnd), once they have looked at it
	Topics   int
	Buckets  int
	// Batched says how many pushes, pops and acks this broker sent to Redis
	// in how many script calls since it started.
	Batched pool.BatchStats
	// LeftAliases counts client ids this broker could not drop after their
	// job was deleted (a Redis fault between the two steps; harmless).
	LeftAliases int64
	// RefusedExpired counts expired jobs this broker dropped because their
	// expire_to topic refused them (full, or the body too big for it).
	RefusedExpired int64
}

// Stats reads the server-wide counts.
func (d *Dispatcher) Stats(ctx context.Context) (ServerStats, error) {
	c, err := d.pool.Stats(ctx)
	if err != nil {
		return ServerStats{}, err
	}
	topics, err := d.pool.TopicCount(ctx)
	if err != nil {
		return ServerStats{}, err
	}
	return ServerStats{Counters: c, Uptime: time.Since(d.started), Waiting: d.waiters.len(), EndWaits: d.ends.listeners(),
		Topics: topics, Buckets: d.pool.Buckets(), Batched: d.pool.BatchStats(),
		LeftAliases: d.pool.LeftAliases(), RefusedExpired: d.pool.RefusedExpired()}, nil
}

// Stats reads one topic (job.ErrNotFound if unknown).
func (tp Topic) Stats(ctx context.Context) (job.TopicStats, error) {
	topic := tp.name
	if err := job.ValidateTopic(topic); err != nil {
		return job.TopicStats{}, err
	}
	t, err := tp.d.pool.TopicStats(ctx, topic)
	t.Settings = t.Settings.Masked()
	return t, err
}

// Topics returns the stats of up to limit topics, in name order, starting
// after the first offset ones (none past the end), and how many topics there
// are. It is a read and changes nothing: an empty topic stays until it is
// deleted or its max_queue_age forgets it (listing used to forget empty
// topics, so a topic just listed answered 404).
func (d *Dispatcher) Topics(ctx context.Context, offset, limit int) ([]job.TopicStats, int, error) {
	names, total, err := d.pool.TopicPage(ctx, offset, limit)
	if err != nil {
		return nil, 0, err
	}
	// Read a bucket's topics together, all buckets at once: a page of 1,000
	// took 0.3 s read one by one, 50 ms one script call per topic at once.
	stats, errs := d.pool.TopicStatsOf(ctx, names)
	out := make([]job.TopicStats, 0, len(names))
	for i := range names {
		if errors.Is(errs[i], job.ErrNotFound) {
			continue // forgotten meanwhile
		}
		if errs[i] != nil {
			return nil, 0, errs[i]
		}
		stats[i].Settings = stats[i].Settings.Masked()
		out = append(out, stats[i])
	}
	return out, total, nil
}

// BucketStats pairs a bucket's schedule in Redis with this broker's timer.
type BucketStats struct {
	pool.BucketInfo
	NextWake time.Time // when this broker's timer for the bucket fires next
	Node     string    // the Redis node that holds it (a cluster master, or the one Redis)
}

// Buckets describes every bucket's timer.
func (d *Dispatcher) Buckets(ctx context.Context) ([]BucketStats, error) {
	out := make([]BucketStats, len(d.buckets))
	nodes := d.pool.BucketNodes(ctx)
	for i, b := range d.buckets {
		info, err := d.pool.Bucket(ctx, i)
		if err != nil {
			return nil, err
		}
		out[i] = BucketStats{BucketInfo: info, NextWake: b.NextWake(), Node: nodes[i]}
	}
	return out, nil
}

// StoreInfo is what the front ends and the metrics read of the store
// itself, as the store answers it: the dispatcher adds nothing, so it
// hands the store over (Store) rather than forwarding each call.
type StoreInfo interface {
	// Nodes lists the Redis nodes (a cluster's every node) with their
	// roles, memory, round trips and slots.
	Nodes(ctx context.Context) []job.NodeInfo
	// Info reads Redis's memory use and round-trip time.
	Info(ctx context.Context) (job.RedisInfo, error)
	// Ping reports whether Redis answers.
	Ping(ctx context.Context) error
	// History returns the sampled counters, oldest first (see
	// sampleHistory).
	History(ctx context.Context) ([]job.Sample, error)
	// ObserveBatches calls fn with the number of operations of each
	// batched script call this broker makes (the metrics' histogram).
	ObserveBatches(fn func(ops int))
}

// Store is the store, for what it tells of itself (StoreInfo).
func (d *Dispatcher) Store() StoreInfo { return d.pool }

// WaitingOn is how many consumers wait on topic in a long poll on this broker.
func (d *Dispatcher) WaitingOn(topic string) int { return d.waiters.on(topic) }

// WaitingElsewhere is how many consumers wait on this broker on topics
// other than the given ones (each consumer once per topic it waits on).
func (d *Dispatcher) WaitingElsewhere(topics []string) int { return d.waiters.onOthers(topics) }

// sampleHistory samples the server's counters into Redis (Run calls it
// twice every HistoryEvery), for the dashboard's chart: the samples are
// shared by every broker on the Redis (the first one due writes), so the
// chart shows the last hour when a page opens, whichever broker serves it.
// The broker that wrote the sample then samples the first topics too
// (sampleTopics): one broker an interval, as for the server's.
func (d *Dispatcher) sampleHistory(ctx context.Context) {
	st, err := d.pool.Stats(ctx)
	if err != nil {
		return // Redis down: the chart shows the gap
	}
	values := map[string]int64{"pushed": st.Jobs, "reserved": st.Reserves, "deleted": st.Deletes, "failed": st.Failures,
		"ready": st.Ready, "delayed": st.Delayed, "reserved_now": st.Reserved, "buried": st.Buried, "dead": st.Dead}
	written, err := d.pool.AddHistory(ctx, d.opts.HistoryEvery, d.opts.HistoryKeep, values)
	if err != nil && ctx.Err() == nil {
		d.log.Debug("recording history failed", "err", err)
	}
	if written && d.opts.HistoryTopics > 0 {
		d.sampleTopics(ctx)
	}
}

// TopicHistoryWindow is how far back a topic's own history goes: the
// dashboard's topic sparklines show the last 5 minutes.
const TopicHistoryWindow = 5 * time.Minute

// sampleTopics samples the totals of the first HistoryTopics topics of the
// listing (the dashboard's first page) into each one's own history, which
// keeps TopicHistoryWindow's worth of samples and expires a minute after
// its last one. Its cost is that page's, however many topics there are
// (docs/PERFORMANCE.md, "200,000 topics"); a topic past the first page has
// no history, and its sparkline fills as the dashboard polls.
func (d *Dispatcher) sampleTopics(ctx context.Context) {
	names, _, err := d.pool.TopicPage(ctx, 0, d.opts.HistoryTopics)
	if err != nil {
		if ctx.Err() == nil {
			d.log.Debug("sampling topics failed", "err", err)
		}
		return
	}
	stats, errs := d.pool.TopicStatsOf(ctx, names)
	samples := make(map[string]map[string]int64, len(names))
	for i, s := range stats {
		if errs[i] == nil { // else forgotten meanwhile, or its node is down: a gap in its sparkline
			samples[names[i]] = map[string]int64{"pushed": s.Jobs, "reserved": s.Reserves, "deleted": s.Deletes, "failed": s.Failures}
		}
	}
	keep := int(TopicHistoryWindow/d.opts.HistoryEvery) + 1
	if err := d.pool.RecordTopicHistory(ctx, keep, TopicHistoryWindow+time.Minute, samples); err != nil && ctx.Err() == nil {
		d.log.Debug("recording topic history failed", "err", err)
	}
}

// TopicHistory returns the own history of each of topics, oldest first
// (see sampleTopics): none for a topic that has none.
func (d *Dispatcher) TopicHistory(ctx context.Context, topics []string) (map[string][]job.Sample, error) {
	for _, t := range topics {
		if err := job.ValidateTopic(t); err != nil {
			return nil, err
		}
	}
	return d.pool.TopicHistory(ctx, topics)
}
