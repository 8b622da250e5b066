// Package brokertest builds whole brokers in-process for tests, the way
// main does (package broker), over a real redis-server, with every front end
// on a free port of 127.0.0.1.
package brokertest

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/gmq/gmq/broker"
	"github.com/gmq/gmq/config"
	"github.com/gmq/gmq/dispatcher"
	"github.com/gmq/gmq/internal/redistest"
	"github.com/gmq/gmq/pool"
)

// Broker is one in-process broker.
type Broker struct {
	Broker     *broker.Broker
	Pool       *pool.Pool
	Dispatcher *dispatcher.Dispatcher
	URL        string // base URL of the HTTP API
	// HTTPAddr, BeanstalkAddr, RPCAddr, KestrelAddr (memcache), TextAddr and
	// ThriftAddr (kestrel's text and thrift protocols) are where the front ends listen.
	HTTPAddr, BeanstalkAddr, RPCAddr, KestrelAddr, TextAddr, ThriftAddr string
}

// Drain makes the broker refuse new jobs where its protocols can say so
// (beanstalkd's DRAINING), as SIGUSR1 does.
func (b *Broker) Drain() { b.Broker.Drain() }

// Start runs a broker over srv with the default configuration, made quicker
// for tests (4 buckets, timers that sleep at most 200 ms, a 1 s shutdown
// grace), changed by tweak (may be nil). It stops when the test ends.
func Start(t testing.TB, srv *redistest.Server, tweak func(*config.Config)) *Broker {
	t.Helper()
	return StartURL(t, srv.URL(), tweak)
}

// StartURL is Start over the Redis at url (a cluster's, for one).
func StartURL(t testing.TB, url string, tweak func(*config.Config)) *Broker {
	t.Helper()
	cfg := config.Default()
	cfg.Buckets = 4
	cfg.BucketMaxSleep = 200 * time.Millisecond
	cfg.ShutdownTimeout = time.Second
	cfg.StatusPoll = 100 * time.Millisecond
	cfg.RedisURL = url
	cfg.ConnectTimeout = 5 * time.Second
	cfg.HTTP, cfg.BeanstalkAddr, cfg.RPCAddr, cfg.KestrelAddr = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	cfg.KestrelTextAddr, cfg.KestrelThriftAddr = "127.0.0.1:0", "127.0.0.1:0"
	if tweak != nil {
		tweak(&cfg)
	}
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	b, err := broker.New(context.Background(), cfg, broker.Options{Version: "test", Log: log})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := b.Run(ctx); err != nil {
			t.Errorf("broker: %v", err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return &Broker{Broker: b, Pool: b.Pool(), Dispatcher: b.Dispatcher(), URL: "http://" + b.Addr("http"),
		HTTPAddr: b.Addr("http"), BeanstalkAddr: b.Addr("beanstalk"), RPCAddr: b.Addr("rpc"), KestrelAddr: b.Addr("kestrel"), TextAddr: b.Addr("text"), ThriftAddr: b.Addr("thrift")}
}

// testWriter routes the broker's log to the test's log.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

// shared is the test package's Redis, started by Main.
var shared *redistest.Server

// Main runs a test package with one redis-server for all its tests; call it
// from TestMain. Fresh and Redis use that server.
func Main(m *testing.M) {
	redistest.Main(m, func(s *redistest.Server) error { shared = s; return nil })
}

// Redis is the server Main started.
func Redis() *redistest.Server { return shared }

// Fresh empties the package's Redis and starts a broker over it.
func Fresh(t testing.TB, tweak func(*config.Config)) *Broker {
	t.Helper()
	shared.Flush(t)
	return Start(t, shared, tweak)
}

// PoolOptions are the default store options for a pool of its own over
// buckets buckets, named origin, for tests that drive the store directly.
func PoolOptions(buckets int, origin string) pool.Options {
	cfg := config.Default()
	cfg.Buckets = buckets
	return broker.PoolOptions(cfg, origin)
}
