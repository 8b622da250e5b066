package main

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/gmq/gmq/client"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

// memoryRun measures Redis memory per pending job in one run on one Redis:
// n jobs pushed to gmq (through its HTTP API, 1,000 a request), n tasks
// enqueued with asynq (its database, db), and n bodies LPUSHed onto a plain
// list (database db+1): the least any Redis queue can use. Each figure is
// used_memory's growth over its step, so nothing else may write to the
// Redis meanwhile. gmq's broker must use the same Redis.
func memoryRun(ctx context.Context, w io.Writer, addr string, db int, gmqURL string, n, clients int, payload []byte) error {
	admin := redis.NewClient(&redis.Options{Addr: addr})
	defer admin.Close()
	used := func() (int64, error) {
		info, err := admin.Info(ctx, "memory").Result()
		if err != nil {
			return 0, err
		}
		m := regexp.MustCompile(`used_memory:(\d+)`).FindStringSubmatch(info)
		if m == nil {
			return 0, fmt.Errorf("INFO memory has no used_memory")
		}
		return strconv.ParseInt(m[1], 10, 64)
	}
	steps := []struct {
		name string
		fill func() error
	}{
		{"gmq (record, body, ready-set entry)", func() error { return gmqFill(ctx, gmqURL, n, clients, string(payload)) }},
		{"asynq v0.26 (task hash, pending list)", func() error {
			_, err := asynqEnqueue(asynq.RedisClientOpt{Addr: addr, DB: db}, n, clients, payload)
			return err
		}},
		{"plain Redis list of the bodies", func() error { return listFill(ctx, addr, db+1, n, payload) }},
	}
	var list float64
	results := make([]float64, len(steps))
	for i, s := range steps {
		before, err := used()
		if err != nil {
			return err
		}
		if err := s.fill(); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		after, err := used()
		if err != nil {
			return err
		}
		results[i] = float64(after-before) / float64(n)
		list = results[i]
	}
	fmt.Fprintf(w, "%-40s %12s %8s\n", fmt.Sprintf("%d pending jobs, %d-byte bodies", n, len(payload)), "bytes/job", "ratio")
	for i, s := range steps {
		fmt.Fprintf(w, "%-40s %12.1f %7.2fx\n", s.name, results[i], results[i]/list)
	}
	return nil
}

// gmqFill pushes n jobs to gmq's topic "memory", 1,000 a request, from the
// given number of clients.
func gmqFill(ctx context.Context, url string, n, clients int, body string) error {
	c := client.New(url, nil)
	var left atomic.Int64
	left.Store(int64(n))
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for {
				k := min(left.Add(-1000)+1000, 1000)
				if k <= 0 {
					return
				}
				jobs := make([]client.Job, k)
				for i := range jobs {
					jobs[i] = client.Job{Topic: "memory", Body: body}
				}
				if _, err := c.PushBatch(ctx, jobs); err != nil {
					once.Do(func() { firstErr = err })
					return
				}
			}
		})
	}
	wg.Wait()
	return firstErr
}

// listFill LPUSHes n copies of body onto one list, 1,000 a pipeline.
func listFill(ctx context.Context, addr string, db, n int, body []byte) error {
	r := redis.NewClient(&redis.Options{Addr: addr, DB: db})
	defer r.Close()
	for i := 0; i < n; i += 1000 {
		pipe := r.Pipeline()
		for range min(1000, n-i) {
			pipe.LPush(ctx, "baseline", body)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return err
		}
	}
	return nil
}
