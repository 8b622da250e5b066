// Command asynq measures github.com/hibiken/asynq, the Redis task queue gmq is
// compared with, and gmq's HTTP API, in one run on one machine: asynq's
// enqueue and processing rates, then gmq's push, pop+ack and full-cycle
// rates, one job a request and -batch jobs a request, with the ratios. Each uses its own Redis database so neither sees the other.
// With -memory N it measures Redis memory per pending job instead: N jobs
// of gmq, of asynq and of a plain list, in one run (memory.go). With -peer
// SIDE it runs one side of bench/peers.sh instead: N jobs enqueued, then
// processed, by asynq or by gmq, and prints one line of JSON (peer.go).
//
//	go run ./bench/asynq -redis 127.0.0.1:6379 -gmq http://127.0.0.1:8000 -jobs 20000 -clients 32
//	go run ./bench/asynq -redis 127.0.0.1:6379 -gmq http://127.0.0.1:8000 -memory 1000000
//	go run ./bench/asynq -peer asynq -redis 127.0.0.1:6379 -db 1 -jobs 20000 -clients 32
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gmq/gmq/gmqbench"
	"github.com/hibiken/asynq"
)

func main() {
	redisAddr := flag.String("redis", "127.0.0.1:6379", "Redis for asynq (its own database, -db)")
	db := flag.Int("db", 1, "Redis database asynq uses")
	gmqURL := flag.String("gmq", "http://127.0.0.1:8000", "gmq's HTTP API")
	jobs := flag.Int("jobs", 20000, "tasks/jobs per phase")
	clients := flag.Int("clients", 32, "concurrent producers, and asynq's worker concurrency")
	size := flag.Int("size", 100, "payload bytes")
	batch := flag.Int("batch", 50, "jobs per request of gmq's batch rows (0: none)")
	memory := flag.Int("memory", 0, "instead, Redis memory per pending job: this many jobs each of gmq, asynq and a plain list (database db+1)")
	peer := flag.String("peer", "", "instead, one side of bench/peers.sh as JSON: asynq, gmq-beanstalk, gmq-http or gmq-http-chained")
	beanstalkAddr := flag.String("beanstalk", "127.0.0.1:11300", "gmq's beanstalkd port (-peer gmq-beanstalk)")
	flag.Parse()

	opt := asynq.RedisClientOpt{Addr: *redisAddr, DB: *db}
	payload := make([]byte, *size)
	if *peer != "" {
		// A side's like-for-like row is one job a request: -batch applies
		// only when given.
		peerBatch := 1
		flag.Visit(func(f *flag.Flag) {
			if f.Name == "batch" {
				peerBatch = *batch
			}
		})
		if err := peerRun(os.Stdout, *peer, *redisAddr, *db, *beanstalkAddr, *gmqURL, *jobs, *clients, *size, peerBatch); err != nil {
			log.Fatal(err)
		}
		return
	}
	if *memory > 0 {
		body := bytes.Repeat([]byte("x"), *size)
		if err := memoryRun(context.Background(), os.Stdout, *redisAddr, *db, *gmqURL, *memory, *clients, body); err != nil {
			log.Fatal(err)
		}
		return
	}
	enqueue, err := asynqEnqueue(opt, *jobs, *clients, payload)
	if err != nil {
		log.Fatal(err)
	}
	process, err := asynqProcess(opt, *jobs, *clients)
	if err != nil {
		log.Fatal(err)
	}
	results, err := gmqbench.Run(context.Background(), "gmq "+*gmqURL, gmqbench.HTTP(*gmqURL),
		gmqbench.Options{Clients: *clients, Jobs: *jobs, Size: *size})
	if err != nil {
		log.Fatal(err)
	}
	byMode := map[string]gmqbench.Result{}
	for _, r := range results {
		byMode[r.Mode] = r
	}
	if *batch > 1 {
		results, err := gmqbench.Run(context.Background(), "gmq "+*gmqURL, gmqbench.HTTP(*gmqURL),
			gmqbench.Options{Clients: *clients, Jobs: *jobs, Size: *size, Batch: *batch})
		if err != nil {
			log.Fatal(err)
		}
		for _, r := range results {
			byMode[r.Mode+" batch"] = r
		}
	}
	w := os.Stdout
	line := func(name string, rate, base float64, of string) {
		if rate > 0 {
			fmt.Fprintf(w, "%-34s %8.0f jobs/s   %.2fx asynq's %s\n", name, rate, rate/base, of)
		}
	}
	fmt.Fprintf(w, "%-34s %8.0f tasks/s\n", "asynq enqueue", enqueue)
	line("gmq HTTP push", byMode["push"].Rate, enqueue, "enqueue")
	line(fmt.Sprintf("gmq HTTP push, %d a request", *batch), byMode["push batch"].Rate, enqueue, "enqueue")
	fmt.Fprintf(w, "%-34s %8.0f tasks/s\n", "asynq processing", process)
	line("gmq HTTP pop+ack", byMode["pop+ack"].Rate, process, "processing")
	line(fmt.Sprintf("gmq HTTP pop+ack, %d a request", *batch), byMode["pop+ack batch"].Rate, process, "processing")
	line("gmq HTTP cycle", byMode["cycle"].Rate, process, "processing")
	line(fmt.Sprintf("gmq HTTP cycle, %d a request", *batch), byMode["cycle batch"].Rate, process, "processing")
}

// asynqEnqueue enqueues n tasks from the given number of goroutines.
func asynqEnqueue(opt asynq.RedisClientOpt, n, clients int, payload []byte) (float64, error) {
	c := asynq.NewClient(opt)
	defer c.Close()
	var next atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	for range clients {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				if _, err := c.Enqueue(asynq.NewTask("bench", payload)); err != nil {
					once.Do(func() { firstErr = fmt.Errorf("enqueue: %w", err) })
					return
				}
			}
		})
	}
	wg.Wait()
	return float64(n) / time.Since(start).Seconds(), firstErr
}

// asynqProcess runs an asynq server until it has processed n tasks.
func asynqProcess(opt asynq.RedisClientOpt, n, concurrency int) (float64, error) {
	var done atomic.Int64
	finished := make(chan struct{})
	srv := asynq.NewServer(opt, asynq.Config{Concurrency: concurrency, LogLevel: asynq.WarnLevel})
	start := time.Now()
	err := srv.Start(asynq.HandlerFunc(func(context.Context, *asynq.Task) error {
		if done.Add(1) == int64(n) {
			close(finished)
		}
		return nil
	}))
	if err != nil {
		return 0, fmt.Errorf("asynq server: %w", err)
	}
	select {
	case <-finished:
	case <-time.After(10 * time.Minute):
		return 0, fmt.Errorf("asynq processed %d of %d tasks in 10 minutes", done.Load(), n)
	}
	elapsed := time.Since(start)
	srv.Shutdown()
	return float64(n) / elapsed.Seconds(), nil
}
