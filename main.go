// Command gmq is a Redis-backed delayed-job broker: producers push JSON jobs
// over HTTP, consumers pop, work and ack them, and Redis keeps every job, so
// brokers are stateless and several can share one Redis.
//
//	gmq start [-c conf.ini] [--http ADDR] [--beanstalk ADDR] [--rpc ADDR] [--token T] [--redis URL]
//	gmq version
package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/gmq/gmq/beanstalk"
	"github.com/gmq/gmq/config"
	"github.com/gmq/gmq/dispatcher"
	"github.com/gmq/gmq/gmqrpc"
	"github.com/gmq/gmq/internal/tcpserver"
	"github.com/gmq/gmq/load"
	"github.com/gmq/gmq/pool"
	"github.com/gmq/gmq/web"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

const usage = `usage:
  gmq start [-c conf.ini] [--http ADDR] [--beanstalk ADDR] [--rpc ADDR] [--token T] [--redis URL]   run the broker
  gmq bench [--beanstalk ADDR | --http URL] [--vs ADDR] [--clients N] [--jobs N] [--size B] [--batch N] [--json]
                                                       measure a broker: push, pop+ack, full cycle
  gmq bench --http URL --delay-rate N [--delay-for D] [--delay-max D] [--batch N]
                                                       measure how late delayed jobs come
  gmq version                                          print the version
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	switch os.Args[1] {
	case "start":
		if err := start(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "gmq:", err)
			os.Exit(1)
		}
	case "bench":
		if err := bench(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "gmq bench:", err)
			os.Exit(1)
		}
	case "version", "--version", "-v":
		fmt.Println("gmq", version)
	default:
		fmt.Fprintf(os.Stderr, "gmq: unknown command %q\n%s", os.Args[1], usage)
		os.Exit(2)
	}
}

func start(args []string) error {
	flags := flag.NewFlagSet("start", flag.ContinueOnError)
	confPath := flags.String("c", "", "configuration file (conf.ini); defaults apply without one")
	// These override conf.ini; Visit below reads the ones given.
	flags.String("http", "", "HTTP listen address, overriding [server] http")
	flags.String("redis", "", "Redis URL, overriding [redis] url")
	flags.String("beanstalk", "", `beanstalkd protocol listen address, overriding [beanstalk] addr ("" turns it off)`)
	flags.String("rpc", "", `gmq JSON-RPC listen address, overriding [rpc] addr ("" turns it off)`)
	flags.String("token", "", "token the dashboard and HTTP API require, overriding [web] token")
	if err := flags.Parse(args); err != nil {
		return err
	}
	cfg := config.Default()
	if *confPath != "" {
		var err error
		if cfg, err = config.Load(*confPath); err != nil {
			return err
		}
	}
	// Only the flags given override the file; an empty value (--rpc "")
	// turns that front end off.
	settings := map[string]string{"http": "server.http", "redis": "redis.url", "beanstalk": "beanstalk.addr",
		"rpc": "rpc.addr", "token": "web.token"}
	var flagErr error
	flags.Visit(func(f *flag.Flag) {
		if key, ok := settings[f.Name]; ok && flagErr == nil {
			if err := cfg.Set(key, f.Value.String()); err != nil {
				flagErr = fmt.Errorf("flag --%s: %w", f.Name, err)
			}
		}
	})
	if flagErr != nil {
		return flagErr
	}
	if err := cfg.CheckOpenPorts(); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	for _, open := range cfg.OpenPorts() {
		log.Warn("a port without authentication listens beyond loopback: anyone who reaches it can push, pop and delete jobs"+
			" (the token guards only HTTP)", "listen", open)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return run(ctx, cfg, log)
}

// run wires the broker together and serves until ctx ends, then shuts down:
// it stops accepting, lets in-flight requests finish (within the shutdown
// timeout), stops the timers and closes Redis.
func run(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	client, err := pool.Dial(ctx, cfg.RedisURL, cfg.ConnectTimeout, log)
	if err != nil {
		return fmt.Errorf("%w (is redis-server running? `make run` starts one)", err)
	}
	defer client.Close()

	origin := newOrigin()
	store := pool.New(client, pool.Options{Prefix: cfg.Prefix, Buckets: cfg.Buckets, Origin: origin, TickBatch: cfg.TickBatch})
	if err := store.Init(ctx); err != nil {
		return err
	}
	d := dispatcher.New(store, dispatcher.Options{MaxBody: cfg.MaxBody, MaxPopTimeout: cfg.MaxPopTimeout,
		MaxWaiting: cfg.MaxWaiting, BucketMaxSleep: cfg.BucketMaxSleep, Log: log})
	var fronts []frontEnd
	connections := func() map[string]int {
		out := make(map[string]int, len(fronts))
		for _, f := range fronts {
			out[f.name] = f.server.Connections()
		}
		return out
	}
	api := web.New(d, web.Options{Version: version, MaxBody: cfg.MaxBody, MaxBatch: cfg.MaxBatch,
		DefaultTTR: cfg.DefaultTTR, DefaultPriority: cfg.DefaultPriority, RequestTimeout: cfg.RequestTimeout,
		Token: cfg.Token, Loopback: config.IsLoopback(cfg.HTTP), AllowedHosts: cfg.AllowedHosts,
		MaxRequestBody: cfg.MaxRequestBody, BodyMemory: cfg.BodyMemory, Connections: connections, Log: log})

	ln, err := net.Listen("tcp", cfg.HTTP)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.HTTP, err)
	}
	ln = limitConnections(ln, "http", cfg.MaxConnections, log)
	var bs *beanstalk.Server
	if cfg.BeanstalkAddr != "" {
		bs = beanstalk.New(d, beanstalk.Options{MaxJobSize: cfg.MaxJobSize, Log: log})
		fronts = append(fronts, frontEnd{"beanstalk", cfg.BeanstalkAddr, bs, nil})
	}
	if cfg.RPCAddr != "" {
		rs := gmqrpc.New(d, gmqrpc.Options{PopWait: cfg.RPCPopWait, DefaultTTR: cfg.DefaultTTR,
			DefaultPriority: cfg.DefaultPriority, MaxBody: cfg.MaxBody, MaxRequest: cfg.MaxRequestBody, Log: log})
		fronts = append(fronts, frontEnd{"rpc", cfg.RPCAddr, rs, nil})
	}
	for i := range fronts {
		if fronts[i].ln, err = net.Listen("tcp", fronts[i].addr); err != nil {
			ln.Close()
			for _, f := range fronts[:i] {
				f.ln.Close()
			}
			return fmt.Errorf("listen on %s: %w", fronts[i].addr, err)
		}
		fronts[i].ln = limitConnections(fronts[i].ln, fronts[i].name, cfg.MaxConnections, log)
	}
	if limit, err := raiseFileLimit(); err != nil {
		log.Warn("open-file limit", "err", err)
	} else if msg := fileLimitWarning(limit, 1+len(fronts), cfg.MaxConnections); msg != "" {
		log.Warn(msg)
	}
	// Long polls end with the shutdown timeout at the latest: their context
	// is the request's, cancelled by Shutdown's deadline via BaseContext.
	reqCtx, cancelRequests := context.WithCancel(context.Background())
	defer cancelRequests()
	srv := &http.Server{Handler: api.Handler(), ReadHeaderTimeout: 10 * time.Second,
		// A long poll's wait is not cut by ReadTimeout: net/http lifts the read
		// deadline once a request's body is read (TestSlowIdleAndLongPollConnections).
		ReadTimeout: cfg.ReadTimeout, IdleTimeout: cfg.IdleTimeout,
		BaseContext: func(net.Listener) context.Context { return reqCtx }}

	dctx, stopDispatcher := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { d.Run(dctx) })
	serveErr := make(chan error, 1+len(fronts))
	wg.Go(func() { serveErr <- srv.Serve(ln) })
	for _, f := range fronts {
		wg.Go(func() {
			if err := f.server.Serve(f.ln); err != nil {
				serveErr <- fmt.Errorf("%s server: %w", f.name, err)
			}
		})
	}
	log.Info("gmq started", "version", version, "http", ln.Addr().String(), "beanstalk", cfg.BeanstalkAddr,
		"rpc", cfg.RPCAddr, "redis", cfg.RedisURL, "buckets", cfg.Buckets, "origin", origin)

	drain := make(chan os.Signal, 1)
	signal.Notify(drain, syscall.SIGUSR1)
	defer signal.Stop(drain)
wait:
	for {
		select {
		case <-ctx.Done():
			log.Info("shutting down", "grace", cfg.ShutdownTimeout)
			break wait
		case err = <-serveErr:
			err = fmt.Errorf("serve: %w", err)
			break wait
		case <-drain:
			if bs != nil {
				log.Info("draining: puts are refused from now on (SIGUSR1)")
				bs.Drain()
			}
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	go func() {
		<-sctx.Done()
		cancelRequests() // grace is over: end the long polls still waiting
	}()
	if serr := srv.Shutdown(sctx); serr != nil && !errors.Is(serr, context.DeadlineExceeded) {
		log.Warn("http shutdown", "err", serr)
	}
	for _, f := range fronts {
		f.server.Close() // beanstalkd connections' reserved jobs go back to ready
	}
	stopDispatcher()
	wg.Wait()
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	log.Info("gmq stopped")
	return nil
}

// bench measures a running broker with the load package: over the beanstalkd
// protocol (gmq's, or any beanstalkd's) or gmq's HTTP API, and, with --vs, the
// same workload against a second beanstalkd address, side by side.
func bench(args []string) error {
	flags := flag.NewFlagSet("bench", flag.ContinueOnError)
	addr := flags.String("beanstalk", "127.0.0.1:11300", "beanstalkd-protocol address to measure (gmq's or beanstalkd's)")
	httpURL := flags.String("http", "", "measure gmq's HTTP API at this URL instead")
	vs := flags.String("vs", "", "also measure this beanstalkd-protocol address, and print the ratio")
	opts := load.Options{}
	flags.IntVar(&opts.Clients, "clients", 32, "concurrent clients")
	flags.IntVar(&opts.Jobs, "jobs", 20000, "jobs per mode")
	flags.IntVar(&opts.Size, "size", 100, "body size in bytes")
	asJSON := flags.Bool("json", false, "print a machine-readable summary")
	delay := load.DelayOptions{MinDelay: time.Second}
	flags.IntVar(&delay.Rate, "delay-rate", 0, "delay mode (with --http): push this many delayed jobs a second and measure how late they come")
	flags.DurationVar(&delay.Duration, "delay-for", 10*time.Second, "delay mode: how long to push")
	flags.DurationVar(&delay.MaxDelay, "delay-max", 5*time.Second, "delay mode: delays are spread from 1s to this")
	flags.IntVar(&opts.Batch, "batch", 1, "over HTTP: jobs per push request, and per pop (acked with the next pop); delay mode: per push request")
	if err := flags.Parse(args); err != nil {
		return err
	}
	delay.Batch = opts.Batch
	if delay.Rate > 0 {
		if *httpURL == "" {
			return errors.New("the delay mode needs --http: beanstalkd's protocol has whole-second delays")
		}
		delay.Consumers = opts.Clients
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		r, err := load.RunDelay(ctx, *httpURL, delay)
		if err != nil {
			return err
		}
		if *asJSON {
			return json.NewEncoder(os.Stdout).Encode(r)
		}
		_, err = fmt.Println(r)
		return err
	}
	if fi, err := os.Stderr.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
		opts.Progress = os.Stderr // a progress bar only on a terminal
	}
	type target struct {
		name string
		dial load.Dialer
	}
	targets := []target{{"beanstalk " + *addr, load.Beanstalk(*addr)}}
	if *httpURL != "" {
		targets[0] = target{"http " + *httpURL, load.HTTP(*httpURL)}
	}
	if *vs != "" {
		targets = append(targets, target{"beanstalk " + *vs, load.Beanstalk(*vs)})
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var runs [][]load.Result
	for _, t := range targets {
		results, err := load.Run(ctx, t.name, t.dial, opts)
		if err != nil {
			return err
		}
		runs = append(runs, results)
	}
	if *asJSON {
		return load.ReportJSON(os.Stdout, runs)
	}
	return load.Report(os.Stdout, runs)
}

// refusals tell a client over [server] max_connections why it is closed, in
// its protocol.
var refusals = map[string]string{
	"http": "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n" +
		`{"error":"too many connections ([server] max_connections)"}` + "\n",
	"beanstalk": "OUT_OF_MEMORY\r\n",
	"rpc":       `{"id":null,"result":null,"error":"too many connections ([server] max_connections)"}` + "\n",
}

// limitConnections caps a listener's open connections at max, logging one
// line per burst of refusals.
func limitConnections(ln net.Listener, name string, max int, log *slog.Logger) net.Listener {
	refused := &tcpserver.Burst{Log: log, Every: 10 * time.Second, Msg: "connection refused: [server] max_connections reached"}
	return tcpserver.LimitListener(ln, max, func(c net.Conn) {
		refused.Event("listener", name, "max", max)
		_ = c.SetWriteDeadline(time.Now().Add(time.Second)) // a refusal that cannot be written is still a refusal
		_, _ = c.Write([]byte(refusals[name]))
	}, log)
}

// frontEnd is a protocol server beside the HTTP API.
type frontEnd struct {
	name, addr string
	server     interface {
		Serve(net.Listener) error
		Connections() int
		Close()
	}
	ln net.Listener
}

// newOrigin names this broker process in wake-ups, unique across restarts.
func newOrigin() string {
	host, err := os.Hostname()
	if err != nil {
		host = "gmq"
	}
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), rand.Text()[:8])
}
