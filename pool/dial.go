package pool

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	neturl "net/url"
	"strings"
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
	return DialTLS(ctx, url, timeout, nil, log)
}

// DialTLS is Dial with a TLS configuration of the operator's (a CA, a
// client certificate, a server name: config's [redis] tls_*); nil keeps the
// URL's (rediss:// with the system's roots).
func DialTLS(ctx context.Context, url string, timeout time.Duration, tlsConf *tls.Config, log *slog.Logger) (rueidis.Client, error) {
	opt, err := rueidis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("redis url %s: %w", Redacted(url), err)
	}
	if tlsConf != nil {
		opt.TLSConfig = tlsConf
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
			return nil, fmt.Errorf("connect to Redis at %s: %w: %w", Redacted(url), job.ErrUnavailable, err)
		}
		log.Warn("Redis not reachable yet; retrying", "url", Redacted(url), "err", err)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// Redacted is a Redis URL fit for logs and errors: its password (in the
// user info, or a password query parameter) shown as ***. An URL that does
// not parse is not shown at all.
func Redacted(raw string) string {
	u, err := neturl.Parse(raw)
	if err != nil {
		return "(a Redis URL that does not parse)"
	}
	if _, has := u.User.Password(); has {
		u.User = neturl.UserPassword(u.User.Username(), "***")
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", "***")
		u.RawQuery = q.Encode()
	}
	return strings.ReplaceAll(u.String(), "%2A%2A%2A", "***")
}

// Open dials Redis as Dial does and returns a Pool over it that owns the
// client: Close closes it.
func Open(ctx context.Context, url string, timeout time.Duration, tlsConf *tls.Config, opts Options, log *slog.Logger) (*Pool, error) {
	client, err := DialTLS(ctx, url, timeout, tlsConf, log)
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
