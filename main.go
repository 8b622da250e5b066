// Command gmq is a Redis-backed delayed-job broker: producers push JSON jobs
// over HTTP, consumers pop, work and ack them, and Redis keeps every job, so
// brokers are stateless and several can share one Redis.
//
//	gmq start [-c conf.ini] [--http ADDR] [--beanstalk ADDR] [--rpc ADDR] [--kestrel ADDR] [--token T] [--redis URL]
//	gmq version
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gmq/gmq/admin"
	"github.com/gmq/gmq/broker"
	"github.com/gmq/gmq/config"
	"github.com/gmq/gmq/load"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

const usage = `usage:
  gmq start [-c conf.ini] [--http ADDR] [--beanstalk ADDR] [--rpc ADDR] [--kestrel ADDR] [--token T] [--redis URL]   run the broker
  gmq bench [--beanstalk ADDR | --http URL | --kestrel ADDR [--reliable]] [--vs ADDR] [--clients N] [--jobs N] [--size B] [--batch N] [--json]
                                                       measure a broker: push, pop+ack, full cycle
  gmq bench --http URL --delay-rate N [--delay-for D] [--delay-max D] [--batch N]
                                                       measure how late delayed jobs come
  gmq version                                          print the version
administration, through a broker's HTTP API:
` + admin.Commands + "\n"

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	switch os.Args[1] {
	case "start":
		exit("gmq:", start(os.Args[2:]))
	case "bench":
		exit("gmq bench:", bench(os.Args[2:]))
	case "version", "--version", "-v":
		fmt.Println("gmq", version)
	default:
		if admin.Known(os.Args[1]) {
			os.Exit(admin.Run(os.Args[1], os.Args[2:], os.Stdout, os.Stderr))
		}
		fmt.Fprintf(os.Stderr, "gmq: unknown command %q\n%s", os.Args[1], usage)
		os.Exit(2)
	}
}

// errUsage marks a command line that was not fully understood: exit 2.
var errUsage = errors.New("usage error")

// exit ends a command that returned err: 0 for none or a -h the flag
// package answered, 2 for a usage error, else 1, with err on stderr.
func exit(prefix string, err error) {
	switch {
	case err == nil || errors.Is(err, flag.ErrHelp):
		return
	case errors.Is(err, errUsage):
		fmt.Fprintln(os.Stderr, prefix, err)
		os.Exit(2)
	}
	fmt.Fprintln(os.Stderr, prefix, err)
	os.Exit(1)
}

// parseAll parses args and refuses any that are left over: the flag package
// stops at the first argument that is not a flag, so `start --http ADDR
// conf.ini --token T` would otherwise start without the token, silently.
func parseAll(flags *flag.FlagSet, args []string) error {
	if err := flags.Parse(args); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if rest := flags.Args(); len(rest) > 0 {
		hint := ""
		if strings.HasSuffix(rest[0], ".ini") {
			hint = fmt.Sprintf(" (a configuration file is given with -c %s)", rest[0])
		}
		return fmt.Errorf("%w: gmq %s: unexpected argument %q%s; nothing after it was read, so nothing was started\nrun gmq %s -h for the flags",
			errUsage, flags.Name(), rest[0], hint, flags.Name())
	}
	return nil
}

func start(args []string) error {
	flags := flag.NewFlagSet("start", flag.ContinueOnError)
	confPath := flags.String("c", "", "configuration file (conf.ini); defaults apply without one")
	// These override conf.ini; Visit below reads the ones given.
	flags.String("http", "", "HTTP listen address, overriding [server] http")
	flags.String("redis", "", "Redis URL, overriding [redis] url")
	flags.String("beanstalk", "", `beanstalkd protocol listen address, overriding [beanstalk] addr ("" turns it off)`)
	flags.String("rpc", "", `gmq JSON-RPC listen address, overriding [rpc] addr ("" turns it off)`)
	flags.String("kestrel", "", `kestrel's memcache protocol listen address, overriding [kestrel] addr ("" turns it off)`)
	flags.String("token", "", "token the dashboard and HTTP API require, overriding [web] token and $GMQ_TOKEN")
	if err := parseAll(flags, args); err != nil {
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
		"rpc": "rpc.addr", "kestrel": "kestrel.addr", "token": "web.token"}
	var flagErr error
	given := map[string]bool{}
	flags.Visit(func(f *flag.Flag) {
		given[f.Name] = true
		if key, ok := settings[f.Name]; ok && flagErr == nil {
			if err := cfg.Set(key, f.Value.String()); err != nil {
				flagErr = fmt.Errorf("flag --%s: %w", f.Name, err)
			}
		}
	})
	if flagErr != nil {
		return flagErr
	}
	// $GMQ_TOKEN, over conf.ini's token or token_file, under --token: a
	// token that need sit neither in a file nor in the process list.
	if env := os.Getenv("GMQ_TOKEN"); env != "" && !given["token"] {
		cfg.Token = env
	}
	if err := cfg.CheckOpenPorts(); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	for _, open := range cfg.OpenPorts() {
		log.Warn("a port without authentication listens beyond loopback: anyone who reaches it can push, pop and delete jobs"+
			" (the token guards only HTTP)", "listen", open)
	}
	if cfg.MetricsBeyondToken() {
		log.Warn("the metrics listener serves /metrics without the token beyond loopback: anyone who reaches it reads "+
			"topic names and counts (the token guards only the HTTP port); bind it to 127.0.0.1 or firewall it", "listen", cfg.MetricsAddr)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	reload := func() (config.Config, error) {
		if *confPath == "" {
			return cfg, nil
		}
		return config.Load(*confPath)
	}
	return run(ctx, cfg, reload, log)
}

// run builds the broker and serves until ctx ends, then shuts it down
// (broker.Run). SIGUSR1 drains it (ReadOnly); SIGHUP reloads the topic
// settings from conf.ini.
func run(ctx context.Context, cfg config.Config, reload func() (config.Config, error), log *slog.Logger) error {
	limit, err := raiseFileLimit()
	if err != nil {
		log.Warn("open-file limit", "err", err)
	}
	if cfg.MaxConnections == 0 {
		cfg.MaxConnections = fitConnections(limit, cfg.Listeners())
		log.Debug("[server] max_connections = 0: fitted to the open-file limit", "max_connections", cfg.MaxConnections, "open_files", limit)
	} else if msg := fileLimitWarning(limit, cfg.Listeners(), cfg.MaxConnections); msg != "" {
		log.Warn(msg)
	}
	b, err := broker.New(ctx, cfg, broker.Options{Version: version, Log: log, Reload: reload})
	if err != nil {
		return err
	}
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGUSR1, syscall.SIGHUP)
	defer signal.Stop(signals)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case sig := <-signals:
				if sig == syscall.SIGUSR1 {
					b.Drain()
				} else if err := b.Reload(ctx); err != nil {
					log.Warn("SIGHUP: the topic settings were not reloaded", "err", err)
				}
			}
		}
	}()
	return b.Run(ctx)
}

// dialers makes a dialer for each of a comma-separated list of addresses.
func dialers(list string, dial func(addr string) load.Dialer) []load.Dialer {
	var out []load.Dialer
	for _, a := range strings.Split(list, ",") {
		out = append(out, dial(strings.TrimSpace(a)))
	}
	return out
}

// spreadName names a target of one or several addresses: the first, and
// how many more.
func spreadName(list string) string {
	first, _, _ := strings.Cut(list, ",")
	if n := strings.Count(list, ","); n > 0 {
		return fmt.Sprintf("%s +%d", first, n)
	}
	return first
}

// parseProcesses reads --cpu's name=pid,name=pid.
func parseProcesses(list string) ([]load.Process, error) {
	var out []load.Process
	for _, item := range strings.Split(list, ",") {
		name, pid, ok := strings.Cut(strings.TrimSpace(item), "=")
		n, err := strconv.Atoi(pid)
		if !ok || name == "" || err != nil || n <= 0 {
			return nil, fmt.Errorf("want name=pid, got %q", item)
		}
		out = append(out, load.Process{Name: name, PID: n})
	}
	return out, nil
}

// bench measures a running broker with the load package: over the beanstalkd
// protocol (gmq's, or any beanstalkd's) or gmq's HTTP API, and, with --vs, the
// same workload against a second beanstalkd address, side by side.
func bench(args []string) error {
	flags := flag.NewFlagSet("bench", flag.ContinueOnError)
	addr := flags.String("beanstalk", "127.0.0.1:11300", "beanstalkd-protocol address to measure (gmq's or beanstalkd's); several, comma-separated: the clients are spread over them")
	httpURL := flags.String("http", "", "measure gmq's HTTP API at this URL instead (several, comma-separated: spread)")
	watch := flags.String("cpu", "", "measure these processes' CPU per mode: name=pid,name=pid (Linux /proc; the bench's own is added)")
	kestrelAddr := flags.String("kestrel", "", "measure gmq's kestrel (memcache) protocol at this address instead")
	reliable := flags.Bool("reliable", false, "with --kestrel: pop with reliable reads (get q/close/open)")
	vs := flags.String("vs", "", "also measure this beanstalkd-protocol address, and print the ratio")
	opts := load.Options{}
	flags.IntVar(&opts.Clients, "clients", 32, "concurrent clients")
	flags.IntVar(&opts.Jobs, "jobs", 20000, "jobs per mode")
	flags.IntVar(&opts.Size, "size", 100, "body size in bytes")
	flags.IntVar(&opts.Topics, "topics", 1, "spread the clients over this many topics (buckets; on a cluster, masters)")
	asJSON := flags.Bool("json", false, "print a machine-readable summary")
	delay := load.DelayOptions{MinDelay: time.Second}
	flags.IntVar(&delay.Rate, "delay-rate", 0, "delay mode (with --http): push this many delayed jobs a second and measure how late they come")
	flags.DurationVar(&delay.Duration, "delay-for", 10*time.Second, "delay mode: how long to push")
	flags.DurationVar(&delay.MaxDelay, "delay-max", 5*time.Second, "delay mode: delays are spread from 1s to this")
	flags.IntVar(&opts.Batch, "batch", 1, "over HTTP: jobs per push request, and per pop (acked with the next pop); delay mode: per push request")
	if err := parseAll(flags, args); err != nil {
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
	targets := []target{{"beanstalk " + spreadName(*addr), load.Spread(dialers(*addr, load.Beanstalk)...)}}
	if *httpURL != "" {
		targets[0] = target{"http " + spreadName(*httpURL), load.Spread(dialers(*httpURL, load.HTTP)...)}
	}
	if *watch != "" {
		procs, err := parseProcesses(*watch)
		if err != nil {
			return fmt.Errorf("--cpu: %w", err)
		}
		opts.Watch = append(procs, load.Self())
	}
	if *kestrelAddr != "" {
		name := "kestrel " + *kestrelAddr
		if *reliable {
			name += " (open/close)"
		}
		targets[0] = target{name, load.Kestrel(*kestrelAddr, *reliable)}
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
