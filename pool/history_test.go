package pool

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/gmq/gmq/internal/redistest"
	"github.com/gmq/gmq/job"
)

// AddHistory says whether it wrote: the first broker due writes, the
// others in the same interval do not.
func TestAddHistorySaysWhetherItWrote(t *testing.T) {
	p, ctx := newPool(t)
	other := New(p.client, p.opts)
	for i, q := range []*Pool{p, other, p} {
		wrote, err := q.AddHistory(ctx, time.Minute, 10, map[string]int64{"pushed": int64(i)})
		if err != nil || wrote != (i == 0) {
			t.Fatalf("call %d: wrote %v, %v; want only the first to write", i, wrote, err)
		}
	}
	if got, err := p.History(ctx); err != nil || len(got) != 1 || got[0].Values["pushed"] != 0 {
		t.Fatalf("history: %+v %v", got, err)
	}
}

// A topic's own history: a list in its bucket's slot, the newest keep
// samples, alive ttl after its last sample.
func TestTopicHistory(t *testing.T) {
	p, ctx := newPool(t)
	topics := []string{"a", "b", "c", "d", "e+child"} // over several of the 4 buckets
	for i := range 5 {
		samples := map[string]map[string]int64{}
		for _, topic := range topics {
			samples[topic] = map[string]int64{"pushed": int64(10 * i), "failed": int64(i)}
		}
		delete(samples["d"], "failed") // a field left out stays out
		if err := p.RecordTopicHistory(ctx, 3, time.Minute, samples); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond) // distinct times
	}
	got, err := p.TopicHistory(ctx, append([]string{"unknown"}, topics...))
	if err != nil {
		t.Fatal(err)
	}
	if len(got["unknown"]) != 0 || len(got) != len(topics)+1 {
		t.Fatalf("a topic with no history: %+v", got)
	}
	for _, topic := range topics {
		h := got[topic]
		if len(h) != 3 || h[0].Values["pushed"] != 20 || h[2].Values["pushed"] != 40 || !h[0].At.Before(h[2].At) {
			t.Fatalf("%s: %+v, want the last three samples, oldest first", topic, h)
		}
		if _, has := h[2].Values["failed"]; has != (topic != "d") {
			t.Errorf("%s: %+v", topic, h[2])
		}
		key := p.keys.topicHistory(topic)
		if !strings.HasPrefix(key, p.keys.tag(p.keys.bucketOf(topic))+":") {
			t.Errorf("%s's history %q is not in its bucket's slot", topic, key)
		}
		ttl, err := p.client.Do(ctx, p.client.B().Pttl().Key(key).Build()).AsInt64()
		if err != nil || ttl <= 50_000 || ttl > 60_000 {
			t.Errorf("%s's history lives %d ms (%v), want about a minute", topic, ttl, err)
		}
	}
	// The server's history is another list, and does not expire.
	if _, err := p.AddHistory(ctx, time.Second, 10, map[string]int64{"pushed": 1}); err != nil {
		t.Fatal(err)
	}
	if ttl, err := p.client.Do(ctx, p.client.B().Pttl().Key(p.keys.history()).Build()).AsInt64(); err != nil || ttl != -1 {
		t.Errorf("the server's history: ttl %d %v, want none", ttl, err)
	}
}

// BenchmarkTopicSampler times what the dispatcher's topic sampler does at
// each interval (dispatcher.sampleTopics): the first page of 100 topics,
// their stats, a sample into each one's history; and reports Redis's own
// time for the stats and the writes. GMQ_BENCH_TOPICS topics (1,000 unless
// set) of one job each, 16 buckets, as bench/topics.sh makes them;
// docs/PERFORMANCE.md ("200,000 topics") has the figures:
//
//	GMQ_BENCH_TOPICS=200000 go test -run '^$' -bench TopicSampler -benchtime 200x ./pool
func BenchmarkTopicSampler(b *testing.B) {
	n := 1000
	if s := os.Getenv("GMQ_BENCH_TOPICS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	p, ctx := benchPool(b)
	for start := 0; start < n; start += 1000 {
		jobs := make([]job.Spec, 0, 1000)
		for i := start; i < min(start+1000, n); i++ {
			jobs = append(jobs, job.Spec{Topic: fmt.Sprintf("t%06d", i), Body: "x", TTR: time.Minute, Priority: job.DefaultPriority})
		}
		if _, errs := p.PushBatch(ctx, jobs); errs != nil {
			for _, err := range errs {
				if err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	if total, err := p.TopicCount(ctx); err != nil || total != n {
		b.Fatalf("%d topics (%v), want %d", total, err, n)
	}
	if _, err := redis.Do("CONFIG", "RESETSTAT"); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		names, _, err := p.TopicPage(ctx, 0, 100)
		if err != nil || len(names) != 100 {
			b.Fatalf("page: %d names, %v", len(names), err)
		}
		stats, errs := p.TopicStatsOf(ctx, names)
		samples := make(map[string]map[string]int64, len(names))
		for i, s := range stats {
			if errs[i] != nil {
				b.Fatal(errs[i])
			}
			samples[names[i]] = map[string]int64{"pushed": s.Jobs, "reserved": s.Reserves, "deleted": s.Deletes, "failed": s.Failures}
		}
		if err := p.RecordTopicHistory(ctx, 61, 6*time.Minute, samples); err != nil {
			b.Fatal(err)
		}
	}
	reportRedisTime(b, p, ctx)
}

// reportRedisTime reports Redis's own time a round (INFO commandstats):
// reading the stats (topic_stats, a read-only function of the library:
// FCALL_RO) and writing the samples (history.lua, a script: EVALSHA).
func reportRedisTime(b *testing.B, p *Pool, ctx context.Context) {
	stats := commandStats(b, p, ctx)
	b.ReportMetric(float64(stats["evalsha"][1])/1000/float64(b.N), "redis-ms-writes/op")
	b.ReportMetric(float64(stats["fcall_ro"][1])/1000/float64(b.N), "redis-ms-stats/op")
}

// benchPool is newPool for a benchmark, with the default 16 buckets.
func benchPool(b *testing.B) (*Pool, context.Context) {
	b.Helper()
	redis.Flush(b)
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{redis.Addr}, DisableCache: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(client.Close)
	p := New(client, withDefaults(Options{Prefix: "gmq", Origin: "bench", TickBatch: 10, Buckets: 16}))
	ctx := redistest.Context(b)
	if err := p.Init(ctx); err != nil {
		b.Fatal(err)
	}
	return p, ctx
}
