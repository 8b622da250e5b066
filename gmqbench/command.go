package gmqbench

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
)

// synopsis is `gmq bench`'s usage.
const synopsis = `usage: gmq bench [--beanstalk ADDR,… | --http URL,… | --kestrel ADDR,… [--reliable] | --thrift ADDR,… [--reliable]] [--vs ADDR]
                 [--clients N] [--jobs N] [--size B] [--batch N] [--topics N] [--cpu NAME=PID,…] [--json]
       gmq bench --http URL --delay-rate N [--delay-for D] [--delay-max D] [--batch N] [--clients N] [--json]`

// About says what `gmq bench` does, in one line, for gmq's usage.
const About = "measure a running broker: jobs/s and latency, or how late delayed jobs come"

// Exit codes of Main, as gmq's other commands use them.
const (
	exitOK    = 0
	exitError = 1 // the run failed
	exitUsage = 2 // the command line is wrong
)

// command is one parsed `gmq bench` line.
type command struct {
	flags                      *flag.FlagSet
	addr, httpURL, kestrelAddr string
	thriftAddr                 string
	vs, watch                  string
	api                        string // gmq's HTTP API, to delete the run's topics
	reliable, json, keep       bool
	opts                       Options
	delay                      DelayOptions
}

// placeholders name each flag's value in the help (bool flags take none).
var placeholders = map[string]string{"api": "URL", "beanstalk": "ADDR,…", "http": "URL,…", "kestrel": "ADDR,…", "thrift": "ADDR,…", "vs": "ADDR",
	"cpu": "NAME=PID,…", "clients": "N", "jobs": "N", "size": "B", "topics": "N", "batch": "N",
	"delay-rate": "N", "delay-for": "D", "delay-max": "D"}

// newCommand defines `gmq bench`'s flags.
func newCommand() *command {
	c := &command{flags: flag.NewFlagSet("bench", flag.ContinueOnError), delay: DelayOptions{MinDelay: time.Second}}
	f := c.flags
	f.SetOutput(io.Discard)
	f.Usage = func() {} // Main prints the help, to stdout
	f.StringVar(&c.addr, "beanstalk", "127.0.0.1:11300", "beanstalkd-protocol address to measure (gmq's or beanstalkd's); several, comma-separated: the clients are spread over them")
	f.StringVar(&c.httpURL, "http", "", "measure gmq's HTTP API at this URL instead (several, comma-separated: spread)")
	f.StringVar(&c.kestrelAddr, "kestrel", "", "measure gmq's kestrel (memcache) protocol at this address instead (several, comma-separated: spread)")
	f.StringVar(&c.thriftAddr, "thrift", "", "measure gmq's kestrel thrift protocol at this address instead (several, comma-separated: spread)")
	f.BoolVar(&c.reliable, "reliable", false, "with --kestrel: pop with reliable reads (get q/close/open); with --thrift: get with auto_abort_msec, then confirm")
	f.StringVar(&c.vs, "vs", "", "also measure this beanstalkd-protocol address, and print the ratio")
	f.StringVar(&c.watch, "cpu", "", "measure these processes' CPU per mode: name=pid,name=pid (Linux /proc; the bench's own is added)")
	f.IntVar(&c.opts.Clients, "clients", 32, "concurrent clients")
	f.IntVar(&c.opts.Jobs, "jobs", 20000, "jobs per mode")
	f.IntVar(&c.opts.Size, "size", 100, "body size in bytes")
	f.IntVar(&c.opts.Topics, "topics", 1, "spread the clients over this many topics (buckets; on a cluster, masters)")
	f.IntVar(&c.opts.Batch, "batch", 1, "over HTTP: jobs per push request, and per pop (acked with the next pop); delay mode: per push request")
	f.BoolVar(&c.json, "json", false, "print a machine-readable summary")
	f.StringVar(&c.api, "api", "", "gmq's HTTP API, through which the run's bench-* topics are deleted when it ends, with env GMQ_TOKEN as its token "+
		"(default: the --http URL, else "+defaultAPI+")")
	f.BoolVar(&c.keep, "keep-topics", false, "leave the run's bench-* topics in place (default: deleted when the run ends)")
	f.IntVar(&c.delay.Rate, "delay-rate", 0, "delay mode (with --http): push this many delayed jobs a second and measure how late they come")
	f.DurationVar(&c.delay.Duration, "delay-for", 10*time.Second, "delay mode: how long to push")
	f.DurationVar(&c.delay.MaxDelay, "delay-max", 5*time.Second, "delay mode: delays are spread from 1s to this")
	return c
}

// usageError is a `gmq bench` line that Main cannot make sense of.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// Main is `gmq bench`: it reads the command line args (the words after
// "bench"), measures a running broker over the beanstalkd protocol (gmq's,
// or any beanstalkd's), gmq's HTTP API or kestrel's, with --vs the same
// workload against a second beanstalkd address side by side, and writes the
// report to out, any failure to errOut; it returns the exit code. SIGINT and
// SIGTERM stop a run. (Run is the measurement of one target it drives.)
func Main(args []string, out, errOut io.Writer) int {
	c := newCommand()
	err := c.parse(args)
	if errors.Is(err, flag.ErrHelp) {
		err = c.help(out)
	} else if err == nil {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		err = c.run(ctx, out, errOut)
	}
	var usage usageError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &usage):
		fmt.Fprintf(errOut, "gmq bench: %v\nrun gmq bench -h for the flags\n", err)
		return exitUsage
	}
	fmt.Fprintf(errOut, "gmq bench: %v\n", err)
	return exitError
}

// parse reads args and refuses any that are left over: the flag package
// stops at the first argument that is not a flag, so `--clients 2 stray
// --jobs 10` would otherwise run with the default jobs, silently.
func (c *command) parse(args []string) error {
	if err := c.flags.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return err
		}
		return usageError{err.Error()}
	}
	if rest := c.flags.Args(); len(rest) > 0 {
		return usageError{fmt.Sprintf("unexpected argument %q; nothing after it was read, so nothing was measured", rest[0])}
	}
	if c.delay.Rate > 0 && c.httpURL == "" {
		return usageError{"the delay mode (--delay-rate) needs --http: beanstalkd's protocol has whole-second delays"}
	}
	if c.watch != "" {
		procs, err := parseProcesses(c.watch)
		if err != nil {
			return usageError{"--cpu: " + err.Error()}
		}
		c.opts.Watch = append(procs, Self())
	}
	return nil
}

// help writes `gmq bench`'s usage and every flag.
func (c *command) help(w io.Writer) error {
	_, err := fmt.Fprintf(w, "%s\n\n%s.\n\nflags:\n", synopsis, strings.ToUpper(About[:1])+About[1:])
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	c.flags.VisitAll(func(f *flag.Flag) {
		fmt.Fprintf(tw, "  --%s\t%s\n", strings.TrimSpace(f.Name+" "+placeholders[f.Name]), f.Usage)
	})
	return tw.Flush()
}

// target is one broker address (or several, spread) a run measures.
type target struct {
	name string
	dial Dialer
}

// defaultAPI is the HTTP API the run's topics are deleted through when the
// line names none: the shipped conf.ini's (make run's).
const defaultAPI = "http://127.0.0.1:8000"

// run measures what the line asks for and writes the report. Progress goes
// to errOut: a bar on a terminal, else a line every few seconds; the run's
// topics are deleted when it ends (unless --keep-topics).
func (c *command) run(ctx context.Context, out, errOut io.Writer) error {
	c.opts.Progress = errOut
	if f, ok := errOut.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			c.opts.Bar = true // a progress bar only on a terminal
		}
	}
	if !c.keep {
		api := c.api
		if api == "" {
			api, _, _ = strings.Cut(c.httpURL, ",")
		}
		if api == "" {
			api = defaultAPI
		}
		c.opts.Drop = DropOverHTTP(strings.TrimSpace(api), os.Getenv("GMQ_TOKEN"))
	}
	if c.delay.Rate > 0 {
		c.delay.Batch, c.delay.Consumers = c.opts.Batch, c.opts.Clients
		c.delay.Progress, c.delay.Bar, c.delay.Drop = c.opts.Progress, c.opts.Bar, c.opts.Drop
		r, err := RunDelay(ctx, c.httpURL, c.delay)
		if err != nil {
			return err
		}
		if c.json {
			return json.NewEncoder(out).Encode(r)
		}
		_, err = fmt.Fprintln(out, r)
		return err
	}
	var runs [][]Result
	for _, t := range c.targets() {
		results, err := Run(ctx, t.name, t.dial, c.opts) // its errors name the target
		if err != nil {
			return err
		}
		runs = append(runs, results)
	}
	if c.json {
		return ReportJSON(out, runs)
	}
	return Report(out, runs)
}

// targets are what the line names: the beanstalkd, kestrel or thrift
// address(es), or the HTTP URL(s), then --vs.
func (c *command) targets() []target {
	first := target{"beanstalk " + spreadName(c.addr), Spread(dialers(c.addr, Beanstalk)...)}
	switch {
	case c.kestrelAddr != "":
		name := "kestrel " + spreadName(c.kestrelAddr)
		if c.reliable {
			name += " (open/close)"
		}
		kestrel := func(addr string) Dialer { return Kestrel(addr, c.reliable) }
		first = target{name, Spread(dialers(c.kestrelAddr, kestrel)...)}
	case c.thriftAddr != "":
		name := "thrift " + spreadName(c.thriftAddr)
		if c.reliable {
			name += " (auto-abort/confirm)"
		}
		thrift := func(addr string) Dialer { return Thrift(addr, c.reliable) }
		first = target{name, Spread(dialers(c.thriftAddr, thrift)...)}
	case c.httpURL != "":
		first = target{"http " + spreadName(c.httpURL), Spread(dialers(c.httpURL, HTTP)...)}
	}
	targets := []target{first}
	if c.vs != "" {
		targets = append(targets, target{"beanstalk " + c.vs, Beanstalk(c.vs)})
	}
	return targets
}

// dialers makes a dialer for each of a comma-separated list of addresses.
func dialers(list string, dial func(addr string) Dialer) []Dialer {
	var out []Dialer
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
func parseProcesses(list string) ([]Process, error) {
	var out []Process
	for _, item := range strings.Split(list, ",") {
		name, pid, ok := strings.Cut(strings.TrimSpace(item), "=")
		n, err := strconv.Atoi(pid)
		if !ok || name == "" || err != nil || n <= 0 {
			return nil, fmt.Errorf("want name=pid, got %q", item)
		}
		out = append(out, Process{Name: name, PID: n})
	}
	return out, nil
}
