// Package testbroker builds whole brokers in-process for tests: a pool, a
// running dispatcher and the HTTP API on 127.0.0.1, over a real Redis.
package testbroker

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/gmq/gmq/beanstalk"
	"github.com/gmq/gmq/config"
	"github.com/gmq/gmq/dispatcher"
	"github.com/gmq/gmq/gmqrpc"
	"github.com/gmq/gmq/internal/redistest"
	"github.com/gmq/gmq/pool"
	"github.com/gmq/gmq/web"
	"github.com/redis/rueidis"
)

// Broker is one in-process broker.
type Broker struct {
	Client     rueidis.Client
	Pool       *pool.Pool
	Dispatcher *dispatcher.Dispatcher
	HTTP       *httptest.Server
	URL        string // base URL of the HTTP API
	Beanstalk  *beanstalk.Server
	// BeanstalkAddr is where the beanstalkd protocol listens.
	BeanstalkAddr string
	// RPCAddr is where gmq's JSON-RPC listens.
	RPCAddr string
}

var origins struct {
	sync.Mutex
	n int
}

// Start runs a broker over srv with the default configuration changed by
// tweak (may be nil). It stops when the test ends.
func Start(t testing.TB, srv *redistest.Server, tweak func(*config.Config)) *Broker {
	t.Helper()
	cfg := config.Default()
	cfg.Buckets = 4
	cfg.BucketMaxSleep = 200 * time.Millisecond
	if tweak != nil {
		tweak(&cfg)
	}
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	client, err := pool.Dial(context.Background(), srv.URL(), 5*time.Second, log)
	if err != nil {
		t.Fatal(err)
	}
	origins.Lock()
	origins.n++
	origin := fmt.Sprintf("test-%d", origins.n)
	origins.Unlock()
	p := pool.New(client, pool.Options{Prefix: cfg.Prefix, Buckets: cfg.Buckets, Origin: origin, TickBatch: cfg.TickBatch})
	ctx, cancel := context.WithCancel(context.Background())
	if err := p.Init(ctx); err != nil {
		t.Fatal(err)
	}
	d := dispatcher.New(p, dispatcher.Options{MaxBody: cfg.MaxBody, MaxPopTimeout: cfg.MaxPopTimeout,
		MaxWaiting: cfg.MaxWaiting, BucketMaxSleep: cfg.BucketMaxSleep, Log: log})
	done := make(chan struct{})
	go func() {
		d.Run(ctx)
		close(done)
	}()
	bs := beanstalk.New(d, beanstalk.Options{MaxJobSize: cfg.MaxJobSize, Log: log})
	bln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rs := gmqrpc.New(d, gmqrpc.Options{PopWait: cfg.RPCPopWait, DefaultTTR: cfg.DefaultTTR,
		DefaultPriority: cfg.DefaultPriority, MaxBody: cfg.MaxBody, MaxRequest: cfg.MaxRequestBody, Log: log})
	api := web.New(d, web.Options{Version: "test", MaxBody: cfg.MaxBody, MaxBatch: cfg.MaxBatch,
		DefaultTTR: cfg.DefaultTTR, DefaultPriority: cfg.DefaultPriority, RequestTimeout: cfg.RequestTimeout,
		Token: cfg.Token, Loopback: true, AllowedHosts: cfg.AllowedHosts,
		MaxRequestBody: cfg.MaxRequestBody, BodyMemory: cfg.BodyMemory, Log: log,
		Connections: func() map[string]int {
			return map[string]int{"beanstalk": bs.Connections(), "rpc": rs.Connections()}
		}})
	hs := httptest.NewUnstartedServer(api.Handler())
	hs.Config.ReadTimeout, hs.Config.IdleTimeout = cfg.ReadTimeout, cfg.IdleTimeout
	hs.Start()
	rln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{}, 2)
	go func() {
		if err := bs.Serve(bln); err != nil {
			t.Errorf("beanstalk server: %v", err)
		}
		served <- struct{}{}
	}()
	go func() {
		if err := rs.Serve(rln); err != nil {
			t.Errorf("rpc server: %v", err)
		}
		served <- struct{}{}
	}()
	t.Cleanup(func() {
		bs.Close()
		rs.Close()
		<-served
		<-served
		hs.CloseClientConnections()
		hs.Close()
		cancel()
		<-done
		client.Close()
	})
	return &Broker{Client: client, Pool: p, Dispatcher: d, HTTP: hs, URL: hs.URL,
		Beanstalk: bs, BeanstalkAddr: bln.Addr().String(), RPCAddr: rln.Addr().String()}
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
