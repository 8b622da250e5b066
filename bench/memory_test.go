package bench

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
	"github.com/gmq/gmq/internal/redistest"
	"github.com/gmq/gmq/job"
	"github.com/gmq/gmq/pool"
)

// BenchmarkMemoryPerJob measures Redis memory per pending job for 1,000,000
// ready jobs with 100-byte bodies, against the baseline of the same bodies
// pushed onto a plain Redis list (LPUSH): the least any Redis queue can use.
// Run it with -benchtime 1x; GMQ_MEMORY_JOBS changes the count.
func BenchmarkMemoryPerJob(b *testing.B) {
	n := jobCount(b, "GMQ_MEMORY_JOBS", 1_000_000)
	p := newPool(b)
	client := rawClient(b)
	used := func() int64 {
		text, err := client.Do(context.Background(), client.B().Info().Section("memory").Build()).ToString()
		if err != nil {
			b.Fatal(err)
		}
		m := regexp.MustCompile(`used_memory:(\d+)`).FindStringSubmatch(text)
		v, _ := strconv.ParseInt(m[1], 10, 64) // the pattern matched digits
		return v
	}
	for range b.N {
		before := used()
		fill(b, p, n)
		gmqBytes := float64(used()-before) / float64(n)
		for part, bytes := range memoryByPart(b, client) {
			b.ReportMetric(float64(bytes)/float64(n), part+"-bytes/job")
		}

		redis.Flush(b)
		before = used()
		cmds := make(rueidis.Commands, 0, 1000)
		for i := 0; i < n; i += 1000 {
			cmds = cmds[:0]
			for range min(1000, n-i) {
				cmds = append(cmds, client.B().Lpush().Key("baseline").Element(body).Build())
			}
			for _, r := range client.DoMulti(context.Background(), cmds...) {
				if err := r.Error(); err != nil {
					b.Fatal(err)
				}
			}
		}
		listBytes := float64(used()-before) / float64(n)
		b.ReportMetric(gmqBytes, "gmq-bytes/job")
		b.ReportMetric(listBytes, "list-bytes/job")
		b.ReportMetric(gmqBytes/listBytes, "ratio")
		b.ReportMetric(0, "ns/op")
	}
}

// memoryByPart sums MEMORY USAGE (every entry counted: SAMPLES 0) of the
// keys of each part of a job: the bucket's record hash ("jobs"), its body
// hash ("bodies") and the topics' ready sets ("ready"), so the per-job
// figure says where the bytes go.
func memoryByPart(b *testing.B, client rueidis.Client) map[string]int64 {
	ctx := context.Background()
	out := map[string]int64{}
	for part, pattern := range map[string]string{"jobs": "*:jobs", "bodies": "*:bodies", "ready": "*:ready:*"} {
		keys, err := client.Do(ctx, client.B().Keys().Pattern(pattern).Build()).AsStrSlice()
		if err != nil {
			b.Fatal(err)
		}
		for _, k := range keys {
			n, err := client.Do(ctx, client.B().MemoryUsage().Key(k).Samples(0).Build()).AsInt64()
			if err != nil {
				b.Fatal(err)
			}
			out[part] += n
		}
	}
	return out
}

// BenchmarkFlushTopic flushes a topic of 1,000,000 jobs (GMQ_FLUSH_JOBS
// changes the count) and reports the longest single script call Redis ran
// for it (from SLOWLOG, Redis's own timing): a flush goes in bounded steps,
// so no call may hold Redis for long whatever the topic's size. Run it with
// -benchtime 1x.
func BenchmarkFlushTopic(b *testing.B) {
	n := jobCount(b, "GMQ_FLUSH_JOBS", 1_000_000)
	p := newPool(b)
	client := rawClient(b)
	ctx := context.Background()
	for range b.N {
		fill(b, p, n)
		start := time.Now()
		var removed int
		var err error
		longest, calls := slowestCall(b, client, func() {
			removed, err = p.Purge(ctx, "bench", job.Ready, job.Delayed, job.Reserved, job.Buried)
		})
		took := time.Since(start)
		if err != nil || removed != n {
			b.Fatalf("flush: %d of %d, %v", removed, n, err)
		}
		b.ReportMetric(float64(longest)/1000, "longest-call-ms")
		b.ReportMetric(float64(calls), "calls")
		b.ReportMetric(took.Seconds(), "flush-s")
		b.ReportMetric(0, "ns/op")
	}
}

// slowestCall runs op and returns the longest script call Redis ran
// meanwhile (µs, from SLOWLOG: Redis's own timing) and how many it ran
// (INFO commandstats). SLOWLOG logs calls over 0.5 ms only: Redis 7 logs
// the commands a script runs too, which would flood it.
func slowestCall(b *testing.B, client rueidis.Client, op func()) (longest int64, calls int) {
	b.Helper()
	ctx := context.Background()
	do := func(args ...string) rueidis.RedisResult { return client.Do(ctx, client.B().Arbitrary(args...).Build()) }
	for _, cmd := range [][]string{{"CONFIG", "SET", "slowlog-log-slower-than", "500"},
		{"CONFIG", "SET", "slowlog-max-len", "100000"}, {"SLOWLOG", "RESET"}} {
		if err := do(cmd...).Error(); err != nil {
			b.Fatal(err)
		}
	}
	before := scriptCalls(b, client)
	op()
	calls = scriptCalls(b, client) - before
	entries, err := do("SLOWLOG", "GET", "-1").ToArray()
	if err != nil {
		b.Fatal(err)
	}
	var durations []int64
	for _, e := range entries {
		fields, _ := e.ToArray()
		if len(fields) < 4 {
			continue
		}
		cmd, _ := fields[3].AsStrSlice()
		if len(cmd) == 0 || !(strings.HasPrefix(strings.ToUpper(cmd[0]), "EVAL") || strings.HasPrefix(strings.ToUpper(cmd[0]), "FCALL")) {
			continue
		}
		us, _ := fields[2].AsInt64()
		longest = max(longest, us)
		durations = append(durations, us)
	}
	_ = do("CONFIG", "SET", "slowlog-log-slower-than", "10000").Error() // back to Redis's default
	slices.Sort(durations)
	b.Logf("slowest calls (µs): %v; %d of %d script calls took over 0.5 ms", durations[max(len(durations)-5, 0):], len(durations), calls)
	return longest, calls
}

// scriptCalls is how many script calls (EVAL, EVALSHA, and FCALL of gmq's
// library of functions) Redis has run.
func scriptCalls(b *testing.B, client rueidis.Client) int {
	b.Helper()
	info, err := client.Do(context.Background(), client.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(info, "\n") {
		for _, cmd := range []string{"cmdstat_eval:", "cmdstat_evalsha:", "cmdstat_fcall:", "cmdstat_fcall_ro:"} {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(line), cmd+"calls="); ok {
				calls, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
				n += calls
			}
		}
	}
	return n
}

// BenchmarkBulkDead retries every dead job of a topic of 1,000,000
// (GMQ_BULK_JOBS changes the count), then kicks them all (kick revives dead
// jobs once no buried one is left), and reports the longest single script
// call of each: the bulk operations go in bounded steps. Run it with
// -benchtime 1x.
func BenchmarkBulkDead(b *testing.B) {
	n := jobCount(b, "GMQ_BULK_JOBS", 1_000_000)
	p := newPool(b)
	client := rawClient(b)
	ctx := context.Background()
	if err := p.SetTopicConfig(ctx, "bench", job.TopicConfig{"max_attempts": "1"}); err != nil {
		b.Fatal(err)
	}
	spec := benchJob()
	spec.TTR = time.Millisecond // popped, they fail at once
	for range b.N {
		fillWith(b, p, n, spec)
		kill(b, p, n)
		var retried int
		var err error
		longest, calls := slowestCall(b, client, func() { retried, err = p.RetryDead(ctx, "bench", nil) })
		if err != nil || retried != n {
			b.Fatalf("retry dead: %d of %d, %v", retried, n, err)
		}
		b.ReportMetric(float64(longest)/1000, "retry-longest-call-ms")
		b.ReportMetric(float64(calls), "retry-calls")
		b.Logf("retried %d dead jobs", retried)
		kill(b, p, n)
		var kicked int
		longest, calls = slowestCall(b, client, func() { kicked, err = p.Kick(ctx, "bench", n) })
		if err != nil || kicked != n {
			b.Fatalf("kick: %d of %d, %v", kicked, n, err)
		}
		b.ReportMetric(float64(longest)/1000, "kick-longest-call-ms")
		b.ReportMetric(float64(calls), "kick-calls")
		b.ReportMetric(0, "ns/op")
		if _, err := p.Purge(ctx, "bench", job.Ready); err != nil {
			b.Fatal(err)
		}
	}
}

// kill makes the n ready jobs of topic bench dead (its max_attempts is 1,
// their TTR 1 ms): each is popped and left until its TTR runs out, then the
// timer's tick finds it failed past max_attempts.
func kill(b *testing.B, p *pool.Pool, n int) {
	b.Helper()
	ctx := context.Background()
	popped := 0
	for popped < n {
		got, err := p.PopN(ctx, []string{"bench"}, 100)
		if err != nil || got.Job == nil {
			b.Fatalf("pop %d of %d: %v", popped, n, err)
		}
		popped += 1 + len(got.Rest)
	}
	time.Sleep(10 * time.Millisecond)
	for {
		_, more, err := p.Tick(ctx, p.BucketOf("bench"), "bench")
		if err != nil {
			b.Fatal(err)
		}
		if !more {
			return
		}
	}
}

// BenchmarkWaitReplicas is the cost of [redis] wait_replicas: pushes to a
// master with one replica, answered once the master has them (0) or once
// the replica confirms them (1), through the store and over HTTP,
// alternated twice in one run. WAIT takes the push off rueidis's shared
// pipeline onto a connection of its own and adds the round trip to the
// replica; batching still carries many pushes per WAIT.
func BenchmarkWaitReplicas(b *testing.B) {
	master := redistest.Start(b)
	redistest.StartReplica(b, master)
	ctx := context.Background()
	for round := range 2 {
		for _, replicas := range []int{0, 1} {
			b.Run(fmt.Sprintf("store push wait_replicas=%d round %d", replicas, round+1), func(b *testing.B) {
				opts := brokertest.PoolOptions(16, "bench")
				opts.WaitReplicas, opts.WaitTimeout = replicas, time.Second
				p := newPoolOn(b, master, opts)
				b.ResetTimer()
				start := time.Now()
				parallel(b, func() error { _, err := p.Push(ctx, benchJob()); return err })
				report(b, start, b.N, 1)
			})
			b.Run(fmt.Sprintf("HTTP push wait_replicas=%d round %d", replicas, round+1), func(b *testing.B) {
				br, c := newBrokerOn(b, master, func(c *config.Config) { c.WaitReplicas, c.WaitTimeout = replicas, time.Second })
				b.ResetTimer()
				start := time.Now()
				parallel(b, func() error { _, err := post(c, br.URL+"/api/v1/jobs", pushPayload, http.StatusCreated); return err })
				report(b, start, b.N, 1)
			})
		}
	}
}
