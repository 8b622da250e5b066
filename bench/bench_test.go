// Package bench measures gmq's throughput against Redis itself, all in one
// run on one Redis: redis-benchmark's EVALSHA rate (a script that does
// nothing) is the ceiling, and each benchmark reports jobs/s and the share of
// that ceiling its script calls reach. Run it with `make bench`; the figures
// are recorded in docs/PERFORMANCE.md.
package bench

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
	"github.com/gmq/gmq/gmqbench"
	"github.com/gmq/gmq/internal/redistest"
	"github.com/gmq/gmq/job"
	"github.com/gmq/gmq/pool"
)

var (
	redis      *redistest.Server
	ceiling    float64 // EVALSHA calls/s Redis serves for an empty script
	clientsArg = flag.Int("clients", 64, "concurrent clients per benchmark")
	body       = strings.Repeat("x", 100)
)

func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		os.Exit(m.Run()) // plain `go test ./...`: nothing to measure
	}
	redistest.Main(m, func(s *redistest.Server) (err error) {
		redis = s
		if ceiling, err = measureCeiling(); err != nil {
			return fmt.Errorf("ceiling: %w", err)
		}
		fmt.Printf("ceiling: redis-benchmark EVALSHA (empty script, %d clients, pipeline 1): %.0f calls/s\n", *clientsArg, ceiling)
		return nil
	})
}

// measureCeiling runs redis-benchmark against the benchmark Redis: EVALSHA of
// a script that returns at once, the most script calls per second Redis can
// serve to this many clients without pipelining.
func measureCeiling() (float64, error) {
	port := redis.Addr[strings.LastIndex(redis.Addr, ":")+1:]
	sha, err := exec.Command("redis-cli", "-p", port, "SCRIPT", "LOAD", "return 1").Output()
	if err != nil {
		return 0, fmt.Errorf("script load: %w", err)
	}
	out, err := exec.Command("redis-benchmark", "-p", port, "-c", strconv.Itoa(*clientsArg), "-n", "300000", "-q",
		"EVALSHA", strings.TrimSpace(string(sha)), "0").Output()
	if err != nil {
		return 0, fmt.Errorf("redis-benchmark: %w", err)
	}
	m := regexp.MustCompile(`([0-9.]+) requests per second`).FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("redis-benchmark said %q", out)
	}
	return strconv.ParseFloat(string(m[1]), 64)
}

// report adds jobs/s and the share of the EVALSHA ceiling reached by the
// script calls (scripts per job) to a benchmark's result.
func report(b *testing.B, start time.Time, jobs int, scriptsPerJob float64) {
	rate := float64(jobs) / time.Since(start).Seconds()
	b.ReportMetric(rate, "jobs/s")
	b.ReportMetric(100*rate*scriptsPerJob/ceiling, "%ceiling")
	b.ReportMetric(0, "ns/op")
}

func newPool(b *testing.B) *pool.Pool {
	return newPoolOn(b, redis, brokertest.PoolOptions(16, "bench"))
}

// newPoolOn is a pool with opts over srv, emptied first.
func newPoolOn(b *testing.B, srv *redistest.Server, opts pool.Options) *pool.Pool {
	b.Helper()
	srv.Flush(b)
	client, err := pool.Dial(context.Background(), srv.URL(), 5*time.Second, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(client.Close)
	p := pool.New(client, opts)
	if err := p.Init(context.Background()); err != nil {
		b.Fatal(err)
	}
	return p
}

func benchJob() job.Spec {
	return job.Spec{Topic: "bench", Body: body, Priority: 1024, TTR: time.Minute}
}

// parallel runs op b.N times over the configured number of clients.
func parallel(b *testing.B, op func() error) {
	b.SetParallelism(max(*clientsArg/runtime.GOMAXPROCS(0), 1))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := op(); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func fill(b *testing.B, p *pool.Pool, n int) { fillWith(b, p, n, benchJob()) }

// fillWith pushes n copies of spec from 32 producers.
func fillWith(b *testing.B, p *pool.Pool, n int, spec job.Spec) {
	b.Helper()
	var left atomic.Int64
	left.Store(int64(n))
	done := make(chan error, 32)
	for range 32 {
		go func() {
			for left.Add(-1) >= 0 {
				if _, err := p.Push(context.Background(), spec); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for range 32 {
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStorePush(b *testing.B) {
	p := newPool(b)
	ctx := context.Background()
	b.ResetTimer()
	start := time.Now()
	parallel(b, func() error { _, err := p.Push(ctx, benchJob()); return err })
	report(b, start, b.N, 1)
}

func BenchmarkStorePopAck(b *testing.B) {
	p := newPool(b)
	ctx := context.Background()
	fill(b, p, b.N)
	b.ResetTimer()
	start := time.Now()
	parallel(b, func() error { return popAck(ctx, p) })
	report(b, start, b.N, 2)
}

func BenchmarkStoreCycle(b *testing.B) {
	p := newPool(b)
	ctx := context.Background()
	b.ResetTimer()
	start := time.Now()
	parallel(b, func() error {
		if _, err := p.Push(ctx, benchJob()); err != nil {
			return err
		}
		return popAck(ctx, p)
	})
	report(b, start, b.N, 3)
}

func popAck(ctx context.Context, p *pool.Pool) error {
	got, err := p.Pop(ctx, []string{"bench"})
	if err != nil || got.Job == nil {
		return fmt.Errorf("pop: %v %v", got.Job, err)
	}
	return p.Delete(ctx, got.Job.PublicID(), got.Job.Attempt())
}

// The HTTP benchmarks go through a whole in-process broker on 127.0.0.1.

func newBroker(b *testing.B) (*brokertest.Broker, *http.Client) { return newBrokerOn(b, redis, nil) }

// newBrokerOn is a broker over srv, emptied first, its configuration changed
// by tweak (may be nil), and an HTTP client with keep-alive for every client.
func newBrokerOn(b *testing.B, srv *redistest.Server, tweak func(*config.Config)) (*brokertest.Broker, *http.Client) {
	b.Helper()
	srv.Flush(b)
	br := brokertest.Start(b, srv, tweak)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *clientsArg * 2}}
	return br, client
}

func post(c *http.Client, url, payload string, want int) ([]byte, error) {
	resp, err := c.Post(url, "application/json", strings.NewReader(payload))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return nil, err
	}
	if resp.StatusCode != want {
		return nil, fmt.Errorf("POST %s: %d %s", url, resp.StatusCode, buf.Bytes())
	}
	return buf.Bytes(), nil
}

var pushPayload = `{"topic":"bench","body":"` + body + `","TTR":60}`

var idField = regexp.MustCompile(`"id":"([0-9]+)"`)

func httpPopAck(c *http.Client, base string) error {
	data, err := post(c, base+"/api/v1/pop", `{"topics":["bench"]}`, http.StatusOK)
	if err != nil {
		return err
	}
	m := idField.FindSubmatch(data)
	if m == nil {
		return fmt.Errorf("no id in %s", data)
	}
	_, err = post(c, base+"/api/v1/jobs/"+string(m[1])+"/ack", ``, http.StatusOK)
	return err
}

func BenchmarkHTTPPush(b *testing.B) {
	br, c := newBroker(b)
	b.ResetTimer()
	start := time.Now()
	parallel(b, func() error { _, err := post(c, br.URL+"/api/v1/jobs", pushPayload, http.StatusCreated); return err })
	report(b, start, b.N, 1)
}

func BenchmarkHTTPPopAck(b *testing.B) {
	br, c := newBroker(b)
	fill(b, br.Pool, b.N)
	b.ResetTimer()
	start := time.Now()
	parallel(b, func() error { return httpPopAck(c, br.URL) })
	report(b, start, b.N, 2)
}

// batchSize is the batch of the batch benchmarks: jobs per request.
const batchSize = 50

// BenchmarkHTTPPushBatch pushes batchSize jobs a request; an op is a request.
func BenchmarkHTTPPushBatch(b *testing.B) {
	br, _ := newBroker(b)
	dial := gmqbench.HTTP(br.URL)
	b.ResetTimer()
	start := time.Now()
	runClients(b, dial, func(c gmqbench.Client) error { return c.Put(context.Background(), []byte(body), batchSize) })
	report(b, start, b.N*batchSize, 1)
}

// BenchmarkHTTPPopAckBatch is a batch consumer: each request acks the last
// batch and pops up to batchSize jobs; an op is a batch.
func BenchmarkHTTPPopAckBatch(b *testing.B) {
	br, _ := newBroker(b)
	fill(b, br.Pool, b.N*batchSize+*clientsArg*batchSize)
	dial := gmqbench.HTTP(br.URL)
	b.ResetTimer()
	start := time.Now()
	runClients(b, dial, func(c gmqbench.Client) error { return c.PopAck(context.Background(), batchSize) })
	report(b, start, b.N*batchSize, 2)
}

// runClients runs op in parallel, each goroutine with a client of its own.
func runClients(b *testing.B, dial gmqbench.Dialer, op func(gmqbench.Client) error) {
	b.SetParallelism(max(*clientsArg/runtime.GOMAXPROCS(0), 1))
	b.RunParallel(func(pb *testing.PB) {
		c, err := dial("bench")
		if err != nil {
			b.Error(err)
			return
		}
		defer c.Close()
		for pb.Next() {
			if err := op(c); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkHTTPPopAckChained is BenchmarkHTTPPopAck with each ack carrying
// the next pop: one request per job instead of two.
func BenchmarkHTTPPopAckChained(b *testing.B) {
	br, _ := newBroker(b)
	fill(b, br.Pool, b.N+*clientsArg)
	dial := gmqbench.HTTPChained(br.URL)
	b.ResetTimer()
	start := time.Now()
	runClients(b, dial, func(c gmqbench.Client) error { return c.PopAck(context.Background(), 1) })
	report(b, start, b.N, 1) // ack and pop are one script when they share a bucket
}

func BenchmarkHTTPCycle(b *testing.B) {
	br, c := newBroker(b)
	b.ResetTimer()
	start := time.Now()
	parallel(b, func() error {
		if _, err := post(c, br.URL+"/api/v1/jobs", pushPayload, http.StatusCreated); err != nil {
			return err
		}
		return httpPopAck(c, br.URL)
	})
	report(b, start, b.N, 3)
}

// BenchmarkHTTPTopicsPage reads one dashboard page of topics (100) among
// 10,000, as the dashboard does every two seconds.
func BenchmarkHTTPTopicsPage(b *testing.B) {
	br, c := newBroker(b)
	manyTopics(b, br, 10000)
	b.ResetTimer()
	for b.Loop() {
		resp, err := c.Get(br.URL + "/api/v1/topics?offset=5000&limit=100")
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
}

// BenchmarkMetricsScrape is one Prometheus scrape of /metrics (the cache
// off) with 10,000 topics: [metrics] max_topics (1,000) of them read one by
// one, the rest summed from the buckets' counters.
func BenchmarkMetricsScrape(b *testing.B) {
	redis.Flush(b)
	br := brokertest.Start(b, redis, func(c *config.Config) { c.MetricsCache, c.MetricsMaxTopics = 0, 1000 })
	manyTopics(b, br, 10000)
	b.ResetTimer()
	for b.Loop() {
		resp, err := http.Get(br.URL + "/metrics")
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || n == 0 {
			b.Fatalf("status %d, %d bytes", resp.StatusCode, n)
		}
	}
}

// manyTopics pushes one job to each of n topics.
func manyTopics(b *testing.B, br *brokertest.Broker, n int) {
	b.Helper()
	sem := make(chan struct{}, 64)
	errs := make(chan error, n)
	for i := range n {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			_, err := br.Pool.Push(context.Background(), job.Spec{Topic: fmt.Sprintf("topic-%05d", i), Body: "x", Priority: 1})
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
}

// jobCount is how many jobs a large benchmark uses: def, or the count in
// the environment variable env.
func jobCount(b *testing.B, env string, def int) int {
	b.Helper()
	v := os.Getenv(env)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		b.Fatalf("%s: %v", env, err)
	}
	return n
}

// rawClient is a Redis client of the benchmark's Redis, for commands of
// the benchmark's own (INFO, SLOWLOG, the LPUSH baseline).
func rawClient(b *testing.B) rueidis.Client {
	b.Helper()
	client, err := pool.Dial(context.Background(), redis.URL(), 5*time.Second, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(client.Close)
	return client
}
