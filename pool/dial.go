package pool

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/rueidis"

	"github.com/gmq/gmq/job"
)

// Dial opens a Redis client for the pool from a redis:// URL, retrying until
// Redis answers or timeout passes, so a broker started alongside its Redis
// waits for it.
//
// Retries of read-only commands are off: rueidis would otherwise retry them
// for as long as Redis is down, and a caller must get ErrUnavailable at once
// (HTTP 503) instead of a request that hangs.
func Dial(ctx context.Context, url string, timeout time.Duration, log *slog.Logger) (rueidis.Client, error) {
	opt, err := rueidis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("redis url %q: %w", url, err)
	}
	opt.DisableCache = true // reads go through scripts; client-side caching buys nothing
	opt.DisableRetry = true
	deadline := time.Now().Add(timeout)
	for {
		client, err := rueidis.NewClient(opt)
		if err == nil {
			return client, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("connect to Redis at %s: %w: %w", url, job.ErrUnavailable, err)
		}
		log.Warn("Redis not reachable yet; retrying", "url", url, "err", err)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// Open dials Redis as Dial does and returns a Pool over it that owns the
// client: Close closes it.
func Open(ctx context.Context, url string, timeout time.Duration, opts Options, log *slog.Logger) (*Pool, error) {
	client, err := Dial(ctx, url, timeout, log)
	if err != nil {
		return nil, err
	}
	p := New(client, opts)
	p.owned = true
	return p, nil
}

// Close closes the Redis client if the pool opened it (Open).
func (p *Pool) Close() {
	if p.owned {
		p.client.Close()
	}
}
