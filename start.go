package main

// gmq start: its command line, and running the broker until a signal.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/gmq/gmq/admin"
	"github.com/gmq/gmq/broker"
	"github.com/gmq/gmq/config"
	"github.com/gmq/gmq/internal/filelimit"
)

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

// startFlags are gmq start's flags besides -c: each overrides a key of
// conf.ini ([section] key), and has a value named in the help and a usage.
var startFlags = map[string][3]string{
	"http":      {"server.http", "ADDR", "HTTP listen address, overriding [server] http"},
	"redis":     {"redis.url", "URL", "Redis URL, overriding [redis] url"},
	"beanstalk": {"beanstalk.addr", "ADDR", `beanstalkd protocol listen address, overriding [beanstalk] addr ("" turns it off)`},
	"rpc":       {"rpc.addr", "ADDR", `gmq JSON-RPC listen address, overriding [rpc] addr ("" turns it off)`},
	"kestrel":   {"kestrel.addr", "ADDR", `kestrel's memcache protocol listen address, overriding [kestrel] addr ("" turns it off)`},
	"text":      {"kestrel.text_addr", "ADDR", `kestrel's text protocol listen address, overriding [kestrel] text_addr (kestrel's port: 2222)`},
	"thrift":    {"kestrel.thrift_addr", "ADDR", `kestrel's thrift protocol listen address, overriding [kestrel] thrift_addr (kestrel's port: 2229)`},
	"token":     {"web.token", "T", "token the dashboard and HTTP API require, overriding [web] token and $GMQ_TOKEN"},
}

// start runs the broker as conf.ini and the flags say until SIGINT or
// SIGTERM (broker.Run); -h writes its flags to out.
func start(args []string, out io.Writer) error {
	flags := flag.NewFlagSet("start", flag.ContinueOnError)
	flags.SetOutput(io.Discard)
	confPath := flags.String("c", "", "configuration file (conf.ini); defaults apply without one")
	values := map[string]string{"c": "FILE"}
	for name, f := range startFlags {
		flags.String(name, "", f[2])
		values[name] = f[1]
	}
	if err := parseAll(flags, args); errors.Is(err, flag.ErrHelp) {
		var all []*flag.Flag
		flags.VisitAll(func(f *flag.Flag) { all = append(all, f) })
		return admin.PrintHelp(out, "gmq start [-c conf.ini] [--http ADDR] [--beanstalk ADDR] [--rpc ADDR] [--kestrel ADDR] [--text ADDR] [--thrift ADDR] [--token T] [--redis URL]",
			"run the broker. Flags override conf.ini; SIGINT and SIGTERM stop it gracefully, SIGUSR1 drains it, SIGTSTP quiets it, SIGHUP reloads the topic settings", all, values)
	} else if err != nil {
		return err
	}
	cfg := config.Default()
	if *confPath != "" {
		var err error
		if cfg, err = config.Load(*confPath); err != nil {
			return err
		}
	}
	// $GMQ_TOKEN, over conf.ini's token or token_file, under --token: a
	// token that need sit neither in a file nor in the process list.
	if env := os.Getenv("GMQ_TOKEN"); env != "" {
		cfg.Token = env
	}
	// Only the flags given override the file; an empty value (--rpc "")
	// turns that front end off.
	var flagErr error
	flags.Visit(func(f *flag.Flag) {
		if key, ok := startFlags[f.Name]; ok && flagErr == nil {
			if err := cfg.Set(key[0], f.Value.String()); err != nil {
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
	for _, old := range cfg.OldSections {
		log.Warn("the configuration file names a section by its old name, read as the new one: rename it", "file", *confPath, "section", old)
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
// (broker.Run). SIGUSR1 drains it (ReadOnly); SIGTSTP quiets it
// (Quiescent, after [server] status_grace); SIGHUP reloads the topic
// settings from conf.ini.
func run(ctx context.Context, cfg config.Config, reload func() (config.Config, error), log *slog.Logger) error {
	limit, err := filelimit.Raise()
	if err != nil {
		log.Warn("open-file limit", "err", err)
	}
	if cfg.MaxConnections == 0 {
		cfg.MaxConnections = filelimit.Fit(limit, cfg.Listeners(), config.UnfittedMaxConnections)
		log.Debug("[server] max_connections = 0: fitted to the open-file limit", "max_connections", cfg.MaxConnections, "open_files", limit)
	} else if msg := filelimit.Warning(limit, cfg.Listeners(), cfg.MaxConnections); msg != "" {
		log.Warn(msg)
	}
	b, err := broker.New(ctx, cfg, broker.Options{Version: version, Log: log, Reload: reload})
	if err != nil {
		return err
	}
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGUSR1, syscall.SIGHUP, syscall.SIGTSTP)
	defer signal.Stop(signals)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case sig := <-signals:
				switch sig {
				case syscall.SIGUSR1:
					b.Drain()
				case syscall.SIGTSTP:
					b.Quiet()
				default:
					if err := b.Reload(ctx); err != nil {
						log.Warn("SIGHUP: conf.ini was not reloaded (nothing of it was applied)", "err", err)
					}
				}
			}
		}
	}()
	return b.Run(ctx)
}
