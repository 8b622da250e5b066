// Package broker assembles a whole gmq broker from a config.Config: the Redis
// store, the dispatcher and every configured front end (HTTP, beanstalkd,
// JSON-RPC, kestrel's memcache, text and thrift protocols), each on its
// listener under the connection limit. It runs them, drains them and shuts
// them down in order. It is the one place that wires
// the parts together: main keeps only flags, signals and exit codes, and
// package brokertest builds the same brokers for tests.
package broker

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/gmq/gmq/beanstalk"
	"github.com/gmq/gmq/config"
	"github.com/gmq/gmq/dispatcher"
	"github.com/gmq/gmq/docs"
	"github.com/gmq/gmq/gmqrpc"
	"github.com/gmq/gmq/internal/budget"
	"github.com/gmq/gmq/internal/jobjson"
	"github.com/gmq/gmq/internal/tcpserver"
	"github.com/gmq/gmq/job"
	"github.com/gmq/gmq/kestrel/memcache"
	"github.com/gmq/gmq/kestrel/text"
	"github.com/gmq/gmq/kestrel/thrift"
	"github.com/gmq/gmq/metrics"
	"github.com/gmq/gmq/pool"
	"github.com/gmq/gmq/serverset"
	"github.com/gmq/gmq/web"
	"github.com/gmq/gmq/webhook"
)

// A FrontEnd is one protocol server over the dispatcher. Adding a protocol
// is a FrontEnd and one line in New. What the server status refuses, the
// dispatcher refuses (job.ErrRefused); each front end says it in its words.
type FrontEnd interface {
	// Serve accepts connections on ln until Close; it returns nil after Close.
	Serve(ln net.Listener) error
	// Close stops accepting, ends the connections (within the protocol's
	// grace) and waits for them.
	Close()
	// Connections is how many clients are connected now.
	Connections() int
	// Refuse tells a client over [server] max_connections, in the protocol's
	// words, that it is closed; c has a write deadline.
	Refuse(c net.Conn)
}

// Options are what a broker needs beyond its configuration.
type Options struct {
	Version string
	// Origin names this broker in wake-ups; it must be unique among the
	// brokers sharing a Redis ("": one is made from the host, pid and a
	// random part).
	Origin string
	Log    *slog.Logger // nil: none
	// Reload reads the configuration again (SIGHUP, kestrel's reload); nil:
	// a reload applies the configuration the broker started with again.
	Reload func() (config.Config, error)
}

// Broker is one assembled broker. Build it with New, run it with Run.
type Broker struct {
	cfg    config.Config
	opts   Options
	log    *slog.Logger
	pool   *pool.Pool
	d      *dispatcher.Dispatcher
	fronts []*front // HTTP first
	// shutdown ends Run as its ctx would (kestrel's shutdown command, when
	// [kestrel] allow_shutdown is on).
	shutdown chan struct{}
	stopOnce sync.Once
	// members is this broker in ZooKeeper's server sets (nil: [zookeeper]
	// is off): its sets follow the announced status.
	members *serverset.ServerSet
	// deliverer POSTs the jobs of topics with deliver_to ([webhook]).
	deliverer *webhook.Deliverer
}

// front is a front end on its listener.
type front struct {
	name, addr string
	fe         FrontEnd
	ln         net.Listener
}

// New connects to Redis (waiting up to [redis] connect_timeout), checks its
// data, builds the dispatcher and every configured front end, and listens on
// their addresses. Nothing is served until Run.
func New(ctx context.Context, cfg config.Config, opts Options) (*Broker, error) {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Origin == "" {
		opts.Origin = newOrigin()
	}
	b := &Broker{cfg: cfg, opts: opts, log: opts.Log, shutdown: make(chan struct{})}
	var err error
	tlsConf, err := cfg.RedisTLS()
	if err != nil {
		return nil, err
	}
	httpTLS, err := cfg.HTTPTLS()
	if err != nil {
		return nil, err
	}
	popts := PoolOptions(cfg, opts.Origin)
	popts.Version = opts.Version
	// A broker's record in the store must outlive the time between two of
	// its renewals (every status_poll), or a live broker would look gone.
	popts.AnnounceTTL = max(pool.DefaultAnnounceTTL, 3*cfg.StatusPoll)
	b.pool, err = pool.Open(ctx, cfg.RedisURL, cfg.ConnectTimeout, tlsConf, popts, opts.Log)
	if err != nil {
		return nil, fmt.Errorf("%w (is redis-server running? `make run` starts one)", err)
	}
	if err := b.pool.Init(ctx); err != nil {
		b.pool.Close()
		return nil, err
	}
	b.d = dispatcher.New(b.pool, dispatcher.Options{MaxBody: cfg.MaxBody, MaxPopTimeout: cfg.MaxPopTimeout,
		MaxWaiting: cfg.MaxWaiting, MaxSchedules: cfg.MaxSchedules, BucketMaxSleep: cfg.BucketMaxSleep, TopicsPerRound: cfg.TopicsPerRound,
		WaitingTTL: cfg.WaitingTTL, StatusPoll: cfg.StatusPoll, StatusGrace: cfg.StatusGrace, DefaultStatus: cfg.DefaultStatus, MigrateAfter: popts.AnnounceTTL, HistoryEvery: cfg.HistoryEvery, HistoryKeep: cfg.HistoryKeep,
		HistoryTopics: cfg.HistoryTopics, DefaultTTR: cfg.DefaultTTR, DefaultPriority: cfg.DefaultPriority, Egress: cfg.WebhookPolicy(), Log: opts.Log})

	if err := b.d.Status().Init(ctx); err != nil { // [server] default_status, before any request
		b.pool.Close()
		return nil, fmt.Errorf("record this broker's status: %w", err)
	}
	b.d.SetAliases(cfg.Aliases)                                     // the schedules are checked against them
	if _, err := scheduleSections(b.d, cfg.Schedules); err != nil { // before anything is written
		b.pool.Close()
		return nil, err
	}
	if err := b.d.ApplyTopicConfig(ctx, cfg.TopicDefaults, cfg.Topics); err != nil {
		b.pool.Close()
		return nil, err
	}
	b.d.SetAliases(cfg.Aliases)
	if err := applySchedules(ctx, b.d, cfg.Schedules); err != nil {
		b.pool.Close()
		return nil, err
	}
	others := map[string]web.Counter{} // the HTTP stats count the other front ends' clients
	m := metrics.New(b.d, metrics.Options{MaxTopics: cfg.MetricsMaxTopics, CacheFor: cfg.MetricsCache,
		Connections: b.connections, Version: opts.Version})
	observe := func(frontEnd string) func(string, string, time.Duration) {
		return func(op, code string, took time.Duration) { m.ObserveRequest(frontEnd, op, code, took) }
	}
	b.deliverer = webhook.New(b.d, webhook.Options{Policy: cfg.WebhookPolicy(), MaxInFlight: cfg.WebhookMaxInFlight,
		MaxAnswer: cfg.WebhookMaxAnswer, Scan: cfg.WebhookScan, Grace: cfg.ShutdownTimeout, Version: opts.Version,
		Observe: m.ObserveDelivery, Opened: m.DeliveryOpen, Log: opts.Log})
	bodies := budget.New(cfg.BodyMemory) // one for every port: a flood through any of them holds at most this
	api := web.New(b.d, web.Options{Metrics: m.Handler(), Observe: observe("http"), RedisURL: pool.Redacted(cfg.RedisURL), OpenAPI: docs.OpenAPI, TLS: httpTLS, Version: opts.Version, MaxBody: cfg.MaxBody, MaxBatch: cfg.MaxBatch,
		DefaultTTR: cfg.DefaultTTR, DefaultPriority: cfg.DefaultPriority, RequestTimeout: cfg.RequestTimeout,
		Token: cfg.Token, Deliveries: b.deliverer.Stats, Loopback: config.IsLoopback(cfg.HTTP), AllowedHosts: cfg.AllowedHosts,
		MaxRequestBody: cfg.MaxRequestBody, Budget: bodies, ReadTimeout: cfg.ReadTimeout,
		IdleTimeout: cfg.IdleTimeout, ShutdownTimeout: cfg.ShutdownTimeout, Others: others, Log: opts.Log})
	b.fronts = []*front{{name: "http", addr: cfg.HTTP, fe: api}}
	// What every TCP front end is given alike, named for its metrics.
	tcp := func(name string) tcpserver.Options {
		return tcpserver.Options{RequestTimeout: cfg.RequestTimeout, ReadTimeout: cfg.ReadTimeout, Budget: bodies,
			Observe: observe(name), Log: opts.Log}
	}
	if cfg.BeanstalkAddr != "" {
		b.fronts = append(b.fronts, &front{name: "beanstalk", addr: cfg.BeanstalkAddr, fe: beanstalk.New(b.d,
			beanstalk.Options{Options: tcp("beanstalk"), MaxJobSize: cfg.MaxJobSize})})
	}
	if cfg.RPCAddr != "" {
		b.fronts = append(b.fronts, &front{name: "rpc", addr: cfg.RPCAddr, fe: gmqrpc.New(b.d, gmqrpc.Options{Options: tcp("rpc"),
			PopWait: cfg.RPCPopWait, DefaultTTR: cfg.DefaultTTR, DefaultPriority: cfg.DefaultPriority,
			MaxBody: cfg.MaxBody, MaxRequest: cfg.MaxRequestBody})})
	}
	if cfg.KestrelAddr != "" {
		b.fronts = append(b.fronts, &front{name: "kestrel", addr: cfg.KestrelAddr, fe: memcache.New(b.d, memcache.Options{Options: tcp("kestrel"),
			Version: opts.Version, Reload: b.Reload, MaxOpenReads: cfg.KestrelMaxOpenReads, Shutdown: b.shutdownHook(), MaxItemSize: cfg.MaxBody, MaxRequest: cfg.MaxRequestBody, DefaultTTR: cfg.DefaultTTR,
			StatsQueues: cfg.MetricsMaxTopics})})
	}
	if cfg.KestrelTextAddr != "" {
		b.fronts = append(b.fronts, &front{name: "text", addr: cfg.KestrelTextAddr, fe: text.New(b.d, text.Options{Options: tcp("text"),
			Version: opts.Version, MaxOpenReads: cfg.KestrelMaxOpenReads, Shutdown: b.shutdownHook(), MaxItemSize: cfg.MaxBody, MaxRequest: cfg.MaxRequestBody, DefaultTTR: cfg.DefaultTTR})})
	}
	if cfg.KestrelThriftAddr != "" {
		b.fronts = append(b.fronts, &front{name: "thrift", addr: cfg.KestrelThriftAddr, fe: thrift.New(b.d, thrift.Options{Options: tcp("thrift"),
			Version: opts.Version, MaxOpenReads: cfg.KestrelMaxOpenReads, MaxItemSize: cfg.MaxBody, MaxRequest: cfg.MaxRequestBody, DefaultTTR: cfg.DefaultTTR})})
	}
	if cfg.MetricsAddr != "" {
		b.fronts = append(b.fronts, &front{name: "metrics", addr: cfg.MetricsAddr, fe: m.NewServer(config.IsLoopback(cfg.MetricsAddr), cfg.AllowedHosts)})
	}
	for _, f := range b.fronts[1:] {
		others[f.name] = f.fe
	}
	for _, f := range b.fronts {
		if f.ln, err = b.listen(f); err != nil {
			b.closeListeners()
			b.pool.Close()
			return nil, err
		}
	}
	if b.members, err = b.newServerSet(); err != nil {
		b.closeListeners()
		b.pool.Close()
		return nil, err
	}
	return b, nil
}

// listen opens a front end's listener under the connection limit; a client
// over it gets the front end's refusal, and a burst of them one log line.
func (b *Broker) listen(f *front) (net.Listener, error) {
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", f.addr, err)
	}
	refused := &tcpserver.Burst{Log: b.log, Every: 10 * time.Second, Msg: "connection refused: [server] max_connections reached"}
	max := b.cfg.MaxConnections
	if max == 0 { // gmq start fits 0 to the open-file limit; elsewhere (tests) it is this
		max = config.UnfittedMaxConnections
	}
	return tcpserver.LimitListener(ln, max, func(c net.Conn) {
		refused.Event("listener", f.name, "max", max)
		_ = c.SetWriteDeadline(time.Now().Add(time.Second)) // a refusal that cannot be written is still a refusal
		f.fe.Refuse(c)
	}, b.log), nil
}

func (b *Broker) closeListeners() {
	for _, f := range b.fronts {
		if f.ln != nil {
			f.ln.Close()
		}
	}
}

// PoolOptions are the store's options in cfg, for a broker named origin.
func PoolOptions(cfg config.Config, origin string) pool.Options {
	return pool.Options{Prefix: cfg.Prefix, Buckets: cfg.Buckets, Origin: origin, TickBatch: cfg.TickBatch,
		AliasGrace: cfg.AliasGrace, BatchRetention: cfg.BatchRetention, TopicCache: cfg.TopicCache, MaxOpsPerCall: cfg.MaxOpsPerCall, BatchSlots: cfg.BatchSlots,
		WaitReplicas: cfg.WaitReplicas, WaitTimeout: cfg.WaitTimeout}
}

// Addr is where the named front end ("http", "beanstalk", "rpc", "kestrel", "text", "thrift", "metrics") listens,
// "" if it is off.
func (b *Broker) Addr(name string) string {
	for _, f := range b.fronts {
		if f.name == name {
			return f.ln.Addr().String()
		}
	}
	return ""
}

// connections counts each front end's clients now (for the metrics).
func (b *Broker) connections() map[string]int {
	out := make(map[string]int, len(b.fronts))
	for _, f := range b.fronts {
		out[f.name] = f.fe.Connections()
	}
	return out
}

// Listeners is how many listeners the broker has open.
func (b *Broker) Listeners() int { return len(b.fronts) }

// Dispatcher is the broker's core, for tests and benchmarks that drive it
// directly.
func (b *Broker) Dispatcher() *dispatcher.Dispatcher { return b.d }

// Pool is the broker's store, for tests and benchmarks.
func (b *Broker) Pool() *pool.Pool { return b.pool }

// Reload reads the configuration again and applies what can change while
// the broker runs: the topic settings (conf.ini's [topics] and
// [topic.NAME]) and the schedules ([schedule.NAME]), for every broker
// sharing the Redis, run-time changes staying over them; and this broker's
// aliases ([alias.NAME]). A bad schedule stops it before anything is
// applied. The rest of the file takes effect at the next start.
func (b *Broker) Reload(ctx context.Context) error {
	cfg := b.cfg
	if b.opts.Reload != nil {
		var err error
		if cfg, err = b.opts.Reload(); err != nil {
			return fmt.Errorf("reload: %w", err)
		}
	}
	if _, err := scheduleSections(b.d, cfg.Schedules); err != nil { // before anything is applied
		return fmt.Errorf("reload: %w", err)
	}
	if err := cfg.CheckWebhooksAgainst(b.cfg.WebhookPolicy()); err != nil {
		return fmt.Errorf("reload: %w (the allow_hosts this broker started with: [webhook] takes effect at a start)", err)
	}
	if !slices.Equal(cfg.WebhookAllowHosts, b.cfg.WebhookAllowHosts) {
		b.log.Warn("reload: [webhook] allow_hosts changed in the file: it takes effect at the next start", "now", b.cfg.WebhookAllowHosts, "file", cfg.WebhookAllowHosts)
	}
	if err := b.d.ApplyTopicConfig(ctx, cfg.TopicDefaults, cfg.Topics); err != nil {
		return fmt.Errorf("reload: %w", err)
	}
	b.d.SetAliases(cfg.Aliases)
	if err := applySchedules(ctx, b.d, cfg.Schedules); err != nil {
		return fmt.Errorf("reload: %w", err)
	}
	b.log.Info("reloaded the topic settings, aliases and schedules")
	return nil
}

// applySchedules writes conf.ini's [schedule.NAME] sections for every broker.
func applySchedules(ctx context.Context, d *dispatcher.Dispatcher, sections map[string]map[string]string) error {
	file, err := scheduleSections(d, sections)
	if err != nil {
		return err
	}
	return d.Schedules().Apply(ctx, file)
}

// scheduleSections reads conf.ini's [schedule.NAME] sections and checks each
// is a whole schedule, so that a bad one stops a start or a reload before
// anything is applied.
func scheduleSections(d *dispatcher.Dispatcher, sections map[string]map[string]string) (map[string]jobjson.Fields, error) {
	file := make(map[string]jobjson.Fields, len(sections))
	for name, keys := range sections {
		f, err := dispatcher.ScheduleFromINI(keys)
		if err != nil {
			return nil, fmt.Errorf("[schedule.%s] %w", name, err)
		}
		file[name] = f
	}
	return file, d.Schedules().Check(file)
}

// shutdownHook is what kestrel's shutdown command calls: nil (refused)
// unless [kestrel] allow_shutdown.
func (b *Broker) shutdownHook() func() {
	if !b.cfg.KestrelAllowShutdown {
		return nil
	}
	return func() { b.stopOnce.Do(func() { close(b.shutdown) }) }
}

// Drain makes this broker ReadOnly from now on, on every front end,
// whatever the shared status (SIGUSR1, as beanstalkd's drain mode): pushes,
// deletes and flushes are refused (beanstalkd's puts answer DRAINING) while
// pops and acks go on.
func (b *Broker) Drain() {
	b.log.Info("draining: this broker is ReadOnly from now on (SIGUSR1)")
	b.d.Status().SetLocal(job.ReadOnly)
}

// Quiet makes this broker Quiescent from now on (SIGTSTP, as Sidekiq's
// quiet): /readyz and the status say so at once, and after [server]
// status_grace it takes no new jobs while those in hand are finished.
func (b *Broker) Quiet() {
	b.log.Info("quiet: this broker takes no new jobs from now on (SIGTSTP)", "grace", b.cfg.StatusGrace)
	b.d.Status().Quiet()
}

// Run serves until ctx ends or a front end fails, then shuts down: the front
// ends stop accepting and finish (HTTP lets requests in flight finish within
// [server] shutdown_timeout; beanstalkd connections' reserved jobs go back to
// ready), then the timers stop and Redis is closed. It returns the failure
// that ended it, or nil.
func (b *Broker) Run(ctx context.Context) error {
	dctx, stopDispatcher := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { b.d.Run(dctx) })
	if b.members != nil {
		var fn func(job.Status) = b.members.SetStatus
		b.d.Status().OnChange(fn) // the announced status: clients leave before it is enforced
		wg.Go(func() {
			if err := b.members.Run(dctx); err != nil {
				b.log.Error("zookeeper: the server sets' membership ended", "err", err)
			}
		})
	}
	// The deliveries stop with the front ends, and end before the
	// dispatcher does: their last acks and fails go through it.
	deliveries, stopDeliveries := context.WithCancel(context.Background())
	var delivering sync.WaitGroup
	delivering.Go(func() { b.deliverer.Run(deliveries) })
	failed := make(chan error, len(b.fronts))
	for _, f := range b.fronts {
		wg.Go(func() {
			if err := f.fe.Serve(f.ln); err != nil {
				failed <- fmt.Errorf("serve %s: %w", f.name, err)
			}
		})
	}
	b.log.Info("gmq started", "version", b.opts.Version, "http", b.Addr("http"), "beanstalk", b.Addr("beanstalk"),
		"rpc", b.Addr("rpc"), "kestrel", b.Addr("kestrel"), "text", b.Addr("text"), "thrift", b.Addr("thrift"), "metrics", b.Addr("metrics"), "redis", pool.Redacted(b.cfg.RedisURL), "buckets", b.cfg.Buckets, "origin", b.opts.Origin)
	var err error
	select {
	case <-ctx.Done():
		b.log.Info("shutting down", "grace", b.cfg.ShutdownTimeout)
	case <-b.shutdown:
		b.log.Info("shutting down: asked over kestrel's protocol ([kestrel] allow_shutdown)", "grace", b.cfg.ShutdownTimeout)
	case err = <-failed:
	}
	b.d.Status().Stopping() // /readyz: 503 from now, while the front ends finish
	if b.members != nil {
		b.members.SetStatus(job.Quiescent) // and out of every server set
	}
	if grace := min(b.cfg.StatusGrace, b.cfg.ShutdownTimeout); grace > 0 && err == nil {
		// As a stricter status is: announced for the grace before it is
		// enforced, so that load balancers stop sending work (/readyz
		// answers 503) before the listeners close; at most
		// shutdown_timeout, so that a long grace for status changes does
		// not hold a stop for as long.
		b.log.Info("shutting down: /readyz answers 503 for [server] status_grace (at most shutdown_timeout) before the listeners close", "grace", grace)
		select {
		case <-time.After(grace):
		case err = <-failed:
		}
	}
	stopDeliveries()
	for _, f := range b.fronts {
		f.fe.Close()
	}
	delivering.Wait()
	stopDispatcher()
	wg.Wait()
	rctx, cancel := context.WithTimeout(context.Background(), time.Second)
	if rerr := b.pool.Retire(rctx); rerr != nil { // else its record holds a format raise back until it lapses
		b.log.Warn("could not remove this broker's record from the store", "err", rerr)
	}
	cancel()
	b.pool.Close()
	if err != nil {
		return err
	}
	b.log.Info("gmq stopped")
	return nil
}

// newOrigin names this broker process in wake-ups, unique across restarts.
func newOrigin() string {
	host, err := os.Hostname()
	if err != nil {
		host = "gmq"
	}
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), rand.Text()[:8])
}

// Deliverer is the broker's HTTP push delivery, for tests.
func (b *Broker) Deliverer() *webhook.Deliverer { return b.deliverer }
