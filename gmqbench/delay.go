package gmqbench

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gmq/gmq/client"
)

// DelayOptions shape a delay run: Rate delayed jobs per second pushed for
// Duration, each due between MinDelay and MaxDelay after its push.
type DelayOptions struct {
	Rate               int
	Duration           time.Duration
	MinDelay, MaxDelay time.Duration
	Consumers          int
	// Batch is how many jobs a producer pushes, and a consumer pops, per
	// request (1: one each).
	Batch int
	// Progress, Bar, ProgressEvery and Drop are Options' (load.go): how far
	// the jobs have come, and the run's topic deleted at its end.
	Progress      io.Writer
	Bar           bool
	ProgressEvery time.Duration
	Drop          func(ctx context.Context, topics []string) error
}

// DelayResult says how late (never early) delayed jobs were delivered,
// measured on Redis's clock: from the job's due time (created + delay) to
// its reservation.
type DelayResult struct {
	Jobs      int           `json:"jobs"`
	Early     int           `json:"early"`
	P50       time.Duration `json:"p50_late_ns"`
	P99       time.Duration `json:"p99_late_ns"`
	Max       time.Duration `json:"max_late_ns"`
	PushRate  float64       `json:"push_rate"`
	Consumers int           `json:"consumers"`
}

func (r DelayResult) String() string {
	return fmt.Sprintf("%d delayed jobs pushed at %.0f/s, %d consumers: late p50 %s, p99 %s, max %s; early %d",
		r.Jobs, r.PushRate, r.Consumers, ms(r.P50), ms(r.P99), ms(r.Max), r.Early)
}

// RunDelay measures delayed delivery through gmq's HTTP API at baseURL.
func RunDelay(ctx context.Context, baseURL string, opts DelayOptions) (DelayResult, error) {
	c := client.NewWithOptions(baseURL, client.Options{Retries: -1}) // a 503 is reported, not waited out

	topic := "bench-delay-" + randomHex(4)
	defer drop(ctx, opts.Drop, opts.Progress, []string{topic})
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var pushed, received atomic.Int64
	stopBar := progress(opts.Progress, opts.Bar, opts.ProgressEvery, "delay    http "+baseURL, &received,
		int(float64(opts.Rate)*opts.Duration.Seconds()))
	defer stopBar()
	var mu sync.Mutex
	var late []time.Duration
	early := 0
	errs := make(chan error, opts.Consumers+1)
	var consumers sync.WaitGroup
	record := func(job *client.Job) {
		if job.Due == nil {
			return
		}
		reservedAt := job.Due.Add(-time.Duration(job.TTR * float64(time.Second)))
		dueAt := job.Created.Add(time.Duration(job.Delay * float64(time.Second)))
		mu.Lock()
		if d := reservedAt.Sub(dueAt); d < 0 {
			early++
		} else {
			late = append(late, d)
		}
		mu.Unlock()
		received.Add(1)
	}
	for range opts.Consumers {
		consumers.Go(func() {
			if err := consume(ctx, c, topic, max(opts.Batch, 1), record); err != nil && ctx.Err() == nil {
				errs <- err
			}
		})
	}

	start := time.Now()
	pushErr := pushAtRate(ctx, c, topic, opts, &pushed)
	pushSeconds := time.Since(start).Seconds()
	if pushErr != nil {
		cancel()
		consumers.Wait()
		return DelayResult{}, pushErr
	}
	deadline := time.Now().Add(opts.MaxDelay + 10*time.Second)
	for received.Load() < pushed.Load() && time.Now().Before(deadline) {
		select {
		case err := <-errs:
			cancel()
			consumers.Wait()
			return DelayResult{}, err
		case <-time.After(50 * time.Millisecond):
		}
	}
	cancel()
	consumers.Wait()
	if got, want := received.Load(), pushed.Load(); got < want {
		return DelayResult{}, fmt.Errorf("only %d of %d delayed jobs arrived", got, want)
	}
	slices.Sort(late)
	return DelayResult{Jobs: int(pushed.Load()), Early: early, P50: percentile(late, 0.5), P99: percentile(late, 0.99),
		Max: percentile(late, 1), PushRate: float64(pushed.Load()) / pushSeconds, Consumers: opts.Consumers}, nil
}

// consume pops jobs of topic until ctx ends and hands each to record. Each
// ack carries the next pop, as gmq's consumers do; with batch > 1 it pops
// and acks up to batch jobs a request.
func consume(ctx context.Context, c *client.Client, topic string, batch int, record func(*client.Job)) error {
	topics := []string{topic}
	var held []client.Job
	for ctx.Err() == nil {
		var jobs []client.Job
		var err error
		switch {
		case batch > 1:
			jobs, err = nextBatch(ctx, c, held, topics, batch, 2*time.Second)
		default:
			var job *client.Job
			if len(held) == 0 {
				job, err = c.Pop(ctx, topics, 2*time.Second)
			} else {
				job, err = c.AckAndPop(ctx, held[0].ID, held[0].Attempt, topics, 2*time.Second)
			}
			if job != nil {
				jobs = []client.Job{*job}
			}
		}
		if err != nil {
			return fmt.Errorf("pop: %w", err)
		}
		for i := range jobs {
			record(&jobs[i])
		}
		held = jobs
	}
	return nil
}

// pushAtRate pushes opts.Rate delayed jobs a second for opts.Duration, in
// ticks of 10 ms, opts.Batch to a request, over as many goroutines as it
// takes to keep up.
func pushAtRate(ctx context.Context, c *client.Client, topic string, opts DelayOptions, pushed *atomic.Int64) error {
	const tick = 10 * time.Millisecond
	perTick := max(1, opts.Rate*int(tick)/int(time.Second))
	batch := max(1, opts.Batch)
	batches := make(chan []client.Job, opts.Rate)
	var wg sync.WaitGroup
	var firstErr error
	var once sync.Once
	for range 32 {
		wg.Go(func() {
			for jobs := range batches {
				var err error
				if len(jobs) == 1 {
					_, err = c.Push(ctx, jobs[0])
				} else {
					_, err = c.PushBatch(ctx, jobs)
				}
				if err != nil {
					once.Do(func() { firstErr = fmt.Errorf("push: %w", err) })
					continue
				}
				pushed.Add(int64(len(jobs)))
			}
		})
	}
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	span := opts.MaxDelay - opts.MinDelay
	for end := time.Now().Add(opts.Duration); time.Now().Before(end) && ctx.Err() == nil; <-ticker.C {
		for left := perTick; left > 0; left -= batch {
			jobs := make([]client.Job, min(batch, left))
			for i := range jobs {
				delay := opts.MinDelay + time.Duration(rand.Int64N(int64(span)+1))
				jobs[i] = client.Job{Topic: topic, Body: "d", Delay: delay.Seconds(), TTR: 60}
			}
			batches <- jobs
		}
	}
	close(batches)
	wg.Wait()
	return firstErr
}
