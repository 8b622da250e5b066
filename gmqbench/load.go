// Package gmqbench is `gmq bench`, the load generator (the peer benchmarks
// are bench/): it drives a job broker with concurrent clients and measures
// jobs/s and latency percentiles for push, pop+ack and the full cycle. It
// speaks beanstalkd's protocol (so it measures gmq and the real beanstalkd
// alike), gmq's HTTP API and kestrel's memcache and thrift protocols.
package gmqbench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Client is one connection to a broker, used by one goroutine.
type Client interface {
	// Put pushes n jobs with this body: in one request where the protocol
	// has batches, else one after another.
	Put(ctx context.Context, body []byte, n int) error
	// PopAck reserves n jobs of the run's topic and acknowledges (deletes)
	// them, in batches where the protocol has them.
	PopAck(ctx context.Context, n int) error
	Close() error
}

// Dialer opens a client on the given topic.
type Dialer func(topic string) (Client, error)

// Options shape a run.
type Options struct {
	Clients int // concurrent clients
	Jobs    int // jobs per mode
	Size    int // body bytes
	// Batch is how many jobs one call pushes, or pops and acks (1: one).
	Batch int
	// Progress, when set, is told how far each mode is: a bar redrawn in
	// place when Bar (a terminal), else a line every ProgressEvery (0: 5 s)
	// and at each mode's start and end (progress.go). Notes go there too
	// (topics that could not be dropped).
	Progress      io.Writer
	Bar           bool
	ProgressEvery time.Duration
	// Drop, when set, deletes the run's topics once it ends, however it
	// ends: a bench leaves no bench-* topics behind (on gmq's dashboard
	// they sorted first).
	Drop func(ctx context.Context, topics []string) error
	// Watch are processes whose CPU time each mode measures (Linux's /proc).
	Watch []Process
	// Topics spreads the clients over this many topics (client i uses
	// topic i mod Topics), so a run reaches several buckets, and on a
	// Redis Cluster several masters: one topic lives in one bucket. With
	// more than one, each client handles an equal share of the jobs, so
	// every topic gets as many pops as pushes.
	Topics int
	// Modes are the modes to run, in Modes' order (nil: all of them); push
	// and pop+ack alone are one job life each (bench/asynq -peer).
	Modes []string
}

// Result is one mode's measurement against one target.
type Result struct {
	Target  string        `json:"target"`
	Mode    string        `json:"mode"`
	Jobs    int           `json:"jobs"`
	Seconds float64       `json:"seconds"`
	Rate    float64       `json:"jobs_per_second"`
	Batch   int           `json:"batch"` // jobs per call; the latencies are per call
	P50     time.Duration `json:"p50_ns"`
	P90     time.Duration `json:"p90_ns"`
	P99     time.Duration `json:"p99_ns"`
	Max     time.Duration `json:"max_ns"`
	CPU     []CPU         `json:"cpu,omitempty"` // the watched processes' use (Options.Watch)
}

// Modes are run in this order: push leaves Jobs jobs that pop+ack then takes.
var Modes = []string{"push", "pop+ack", "cycle"}

// Spread is a dialer that opens its clients on each of dials in turn: a run
// over several brokers (that share one Redis) measures them together.
func Spread(dials ...Dialer) Dialer {
	var next atomic.Int64
	return func(topic string) (Client, error) {
		return dials[int(next.Add(1)-1)%len(dials)](topic)
	}
}

// Run measures the three modes against one target on a topic of its own.
func Run(ctx context.Context, target string, dial Dialer, opts Options) ([]Result, error) {
	topic := "bench-" + randomHex(4)
	body := make([]byte, opts.Size)
	for i := range body {
		body[i] = 'x'
	}
	topics := []string{topic}
	if opts.Topics > 1 {
		topics = topics[:0]
		for i := range min(opts.Topics, max(opts.Clients, 1)) {
			topics = append(topics, fmt.Sprintf("%s-%d", topic, i))
		}
	}
	defer drop(ctx, opts.Drop, opts.Progress, topics)
	clients := make([]Client, opts.Clients)
	for i := range clients {
		t := topics[i%len(topics)]
		c, err := dial(t)
		if err != nil {
			return nil, fmt.Errorf("%s: connect: %w", target, err)
		}
		defer c.Close()
		clients[i] = c
	}
	ops := map[string]func(c Client, n int) error{
		"push":    func(c Client, n int) error { return c.Put(ctx, body, n) },
		"pop+ack": func(c Client, n int) error { return c.PopAck(ctx, n) },
		"cycle": func(c Client, n int) error {
			if err := c.Put(ctx, body, n); err != nil {
				return err
			}
			return c.PopAck(ctx, n)
		},
	}
	var out []Result
	for _, mode := range Modes {
		if opts.Modes != nil && !slices.Contains(opts.Modes, mode) {
			continue
		}
		r, err := measure(ctx, target, mode, clients, opts, ops[mode])
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}

// measure runs op over the clients until it handled Jobs jobs, Batch a
// call, and times each call.
func measure(ctx context.Context, target, mode string, clients []Client, opts Options, op func(Client, int) error) (Result, error) {
	batch := int64(max(opts.Batch, 1))
	var next, done atomic.Int64
	latencies := make([][]time.Duration, len(clients))
	errs := make([]error, len(clients))
	stopBar := progress(opts.Progress, opts.Bar, opts.ProgressEvery, fmt.Sprintf("%-8s %s", mode, target), &done, opts.Jobs)
	var meter *cpuMeter
	if len(opts.Watch) > 0 {
		var err error
		if meter, err = startCPU(opts.Watch); err != nil {
			stopBar()
			return Result{}, err
		}
	}
	start := time.Now()
	var wg sync.WaitGroup
	for i, c := range clients {
		// Shared work (a counter all clients take from), or each client's
		// own share when the clients are spread over topics.
		claim := func() int64 { return min(batch, int64(opts.Jobs)-(next.Add(batch)-batch)) }
		if opts.Topics > 1 {
			share := int64(opts.Jobs / len(clients))
			if i < opts.Jobs%len(clients) {
				share++
			}
			claim = func() int64 { // called by client i's goroutine only
				n := min(batch, share)
				share -= n
				return n
			}
		}
		wg.Go(func() {
			for ctx.Err() == nil {
				n := claim()
				if n <= 0 {
					return
				}
				t0 := time.Now()
				if err := op(c, int(n)); err != nil {
					errs[i] = fmt.Errorf("%s %s: %w", target, mode, err)
					return
				}
				latencies[i] = append(latencies[i], time.Since(t0))
				done.Add(n)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	stopBar()
	for _, err := range errs {
		if err != nil {
			return Result{}, err
		}
	}
	jobs := int(done.Load())
	var cpu []CPU
	if meter != nil {
		var err error
		if cpu, err = meter.stop(elapsed.Seconds(), jobs); err != nil {
			return Result{}, err
		}
	}
	all := slices.Concat(latencies...)
	slices.Sort(all)
	return Result{Target: target, Mode: mode, Jobs: jobs, Seconds: elapsed.Seconds(),
		Rate: float64(jobs) / elapsed.Seconds(), Batch: int(batch),
		P50: percentile(all, 0.50), P90: percentile(all, 0.90), P99: percentile(all, 0.99), Max: percentile(all, 1), CPU: cpu}, nil
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))]
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "run"
	}
	return hex.EncodeToString(b)
}
