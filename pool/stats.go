package pool

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/gmq/gmq/job"
)

var counterFields = map[string]func(*job.Counters) *int64{
	"cur_ready": func(c *job.Counters) *int64 { return &c.Ready }, "cur_delayed": func(c *job.Counters) *int64 { return &c.Delayed },
	"cur_reserved": func(c *job.Counters) *int64 { return &c.Reserved }, "cur_buried": func(c *job.Counters) *int64 { return &c.Buried },
	"total_jobs": func(c *job.Counters) *int64 { return &c.Jobs }, "total_reserves": func(c *job.Counters) *int64 { return &c.Reserves },
	"total_deletes": func(c *job.Counters) *int64 { return &c.Deletes }, "total_timeouts": func(c *job.Counters) *int64 { return &c.Timeouts },
	"total_releases": func(c *job.Counters) *int64 { return &c.Releases }, "total_buries": func(c *job.Counters) *int64 { return &c.Buries },
	"total_kicks": func(c *job.Counters) *int64 { return &c.Kicks }, "total_touches": func(c *job.Counters) *int64 { return &c.Touches },
	"total_flushed": func(c *job.Counters) *int64 { return &c.Flushed }, "total_discarded": func(c *job.Counters) *int64 { return &c.Discarded },
	"total_expired": func(c *job.Counters) *int64 { return &c.Expired },
	"queue_creates": func(c *job.Counters) *int64 { return &c.QueueCreates }, "queue_deletes": func(c *job.Counters) *int64 { return &c.QueueDeletes },
	"queue_expires": func(c *job.Counters) *int64 { return &c.QueueExpires },
	"cur_dead":      func(c *job.Counters) *int64 { return &c.Dead }, "total_failures": func(c *job.Counters) *int64 { return &c.Failures },
	"total_dead":    func(c *job.Counters) *int64 { return &c.DeadTotal },
	"cur_completed": func(c *job.Counters) *int64 { return &c.Completed }, "total_completed": func(c *job.Counters) *int64 { return &c.CompletedTotal },
	"cur_cancelled": func(c *job.Counters) *int64 { return &c.Cancelled }, "total_cancelled": func(c *job.Counters) *int64 { return &c.CancelledTotal },
}

// Stats sums every bucket's counters. The counts are kept by the same scripts
// that move the jobs, so they agree with the sets they count.
func (p *Pool) Stats(ctx context.Context) (job.Counters, error) {
	var total job.Counters
	p.totals.flushing.RLock() // each total once: in Redis or not yet written (totals.go)
	defer p.totals.flushing.RUnlock()
	cmds := make([]rueidis.Completed, 0, 2*p.opts.Buckets)
	for b := range p.opts.Buckets {
		cmds = append(cmds, p.client.B().Hgetall().Key(p.keys.stats(b)).Build(), p.client.B().Zcard().Key(p.keys.buckets[b].followups).Build())
	}
	res := p.client.DoMulti(ctx, cmds...)
	for i := 0; i < len(res); i += 2 {
		m, err := res[i].AsIntMap()
		if err != nil {
			return total, wrapRedis("stats", err)
		}
		add := func(field string, v int64) {
			if f := counterFields[field]; f != nil {
				*f(&total) += v
			}
		}
		for field, v := range m {
			add(field, v)
		}
		p.totals.withPending(i/2, p.keys.stats(i/2), add)
		n, err := res[i+1].AsInt64()
		if err != nil {
			return total, wrapRedis("stats", err)
		}
		total.FollowUps += n
	}
	return total, nil
}

// TopicCount is how many topics hold jobs (or held them and were not forgotten yet).
func (p *Pool) TopicCount(ctx context.Context) (int, error) {
	cmds := make([]rueidis.Completed, p.opts.Buckets)
	for b := range p.opts.Buckets {
		cmds[b] = p.client.B().Scard().Key(p.keys.topics(b)).Build()
	}
	total := 0
	for _, res := range p.client.DoMulti(ctx, cmds...) {
		n, err := res.AsInt64()
		if err != nil {
			return 0, wrapRedis("topic count", err)
		}
		total += int(n)
	}
	return total, nil
}

// TopicStats reads one topic; ErrNotFound if no job ever named it (or it was forgotten).
func (p *Pool) TopicStats(ctx context.Context, topic string) (job.TopicStats, error) {
	stats, errs := p.readTopicStats(ctx, p.keys.bucketOf(topic), []string{topic})
	return stats[0], errs[0]
}

// topicStatsStep is the most topics one topic_stats call reads: about 1.5 ms
// of Redis's time.
const topicStatsStep = 64

// TopicStatsOf reads several topics, those of a bucket together (a script
// call per bucket and per topicStatsStep topics, all at once), and returns
// each one's stats or error, in the order given: ErrNotFound for a topic no
// job ever named (or that was forgotten).
func (p *Pool) TopicStatsOf(ctx context.Context, topics []string) ([]job.TopicStats, []error) {
	stats, errs := make([]job.TopicStats, len(topics)), make([]error, len(topics))
	byBucket := make(map[int][]int) // bucket -> indexes into topics
	for i, t := range topics {
		b := p.keys.bucketOf(t)
		byBucket[b] = append(byBucket[b], i)
	}
	var wg sync.WaitGroup
	for b, all := range byBucket {
		for chunk := range slices.Chunk(all, topicStatsStep) {
			wg.Go(func() {
				names := make([]string, len(chunk))
				for k, i := range chunk {
					names[k] = topics[i]
				}
				got, gotErrs := p.readTopicStats(ctx, b, names)
				for k, i := range chunk {
					stats[i], errs[i] = got[k], gotErrs[k]
				}
			})
		}
	}
	wg.Wait()
	return stats, errs
}

// readTopicStats reads topics of bucket b in one script call.
func (p *Pool) readTopicStats(ctx context.Context, b int, topics []string) ([]job.TopicStats, []error) {
	stats, errs := make([]job.TopicStats, len(topics)), make([]error, len(topics))
	args := append(topicStatsScript.args(p.caller(), "", "urgent", strconv.Itoa(job.UrgentBelow)), topics...)
	p.totals.flushing.RLock() // each total once: in Redis or not yet written (totals.go)
	defer p.totals.flushing.RUnlock()
	list, err := topicStatsScript.Exec(ctx, p.client, p.keys.withTopics(b, topics...), args).ToArray()
	replies := decodeRepliesReply(list).Replies
	if err == nil && len(replies) != len(topics) {
		err = fmt.Errorf("%d replies for %d topics", len(replies), len(topics))
	}
	for i, topic := range topics {
		var r topicStatsReply
		if err == nil {
			r = decodeTopicStatsReply(replies[i])
		}
		switch {
		case err != nil:
			errs[i] = wrapRedis("topic stats", err)
		case r.Known == 0:
			errs[i] = fmt.Errorf("topic %q: %w", topic, job.ErrNotFound)
		default:
			stats[i] = topicStats(topic, r)
			p.totals.withPending(b, p.keys.info(b, topic), func(field string, n int64) { addTopicTotal(&stats[i], field, n) })
		}
	}
	return stats, errs
}

// addTopicTotal adds n to the total of s that a topic's info hash keeps
// as field, for those the broker counts (totals.go).
func addTopicTotal(s *job.TopicStats, field string, n int64) {
	switch field {
	case "total_jobs":
		s.Jobs += n
	case "total_reserves":
		s.Reserves += n
	case "total_deletes":
		s.Deletes += n
	}
}

// topicStats decodes one topic's reply of topic_stats.lua, by the names
// lua.TopicStat gives its fields.
func topicStats(topic string, r topicStatsReply) job.TopicStats {
	at := func(ms int64) time.Time { // 0: none
		if ms > 0 {
			return time.UnixMilli(ms)
		}
		return time.Time{}
	}
	s := job.TopicStats{Name: topic, Now: time.UnixMilli(r.Now),
		Ready: r.Ready, Urgent: r.Urgent, Delayed: r.Delayed, Reserved: r.Reserved,
		Buried: r.Buried, PausedUntil: at(r.PausedUntil),
		Pause: time.Duration(r.PauseMs) * time.Millisecond,
		Jobs:  r.TotalJobs, Reserves: r.TotalReserves, Deletes: r.TotalDeletes,
		Pauses: r.TotalPauses, Bytes: r.Bytes, Discarded: r.TotalDiscarded,
		Expired: r.TotalExpired, OldestReady: at(r.OldestReady),
		Children: strings.Fields(r.Children),
		Dead:     r.Dead, Failures: r.TotalFailures, DeadTotal: r.TotalDead,
		DeadRetried: r.DeadRetried, DeadDropped: r.DeadDropped, Created: at(r.Created),
		Completed: r.Completed, CompletedTotal: r.TotalCompleted,
		Cancelled: r.Cancelled, CancelledTotal: r.TotalCancelled,
		Tokens: r.Tokens, Limited: r.TotalLimited,
		LimitedTime: time.Duration(r.LimitedMs) * time.Millisecond, Groups: r.Groups,
		GroupsForgotten: r.GroupsForgotten}
	for _, line := range strings.Split(r.BusiestGroups, "\n") {
		if f := strings.Split(line, "\t"); len(f) == 3 {
			ready, _ := strconv.ParseInt(f[1], 10, 64)
			reserved, _ := strconv.ParseInt(f[2], 10, 64)
			s.BusiestGroups = append(s.BusiestGroups, job.GroupStats{Name: f[0], Ready: ready, Reserved: reserved})
		}
	}
	if len(r.Settings) > 0 {
		s.Settings = make(job.TopicConfig, len(r.Settings))
		for _, setting := range r.Settings {
			s.Settings[setting[0]] = setting[1]
		}
	}
	return s
}

// ForgetTopic drops a topic that holds no job and is not paused; it reports
// whether it did.
func (p *Pool) ForgetTopic(ctx context.Context, topic string) (bool, error) {
	b := p.keys.bucketOf(topic)
	n, err := forgetTopicScript.Exec(ctx, p.client, p.keys.withTopics(b, topic), forgetTopicScript.args(p.caller(), "", "topic", topic, "force", "")).AsInt64()
	if err != nil {
		return false, wrapRedis("forget topic", err)
	}
	if n == 1 {
		p.totals.forget(b, p.keys.info(b, topic)) // its totals went with it
	}
	return n == 1, nil
}
