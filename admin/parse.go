package admin

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
)

// defaultURL is the broker the commands talk to without --url or GMQ_URL:
// the shipped conf.ini's (make run's).
const defaultURL = "http://127.0.0.1:8000"

// call is one command's parsed line and its connection to the API.
type call struct {
	base, token string
	json        bool
	args        []string
	given       map[string]bool // the flags on the line
	delay, ttr  float64         // push, release, update
	priority    int64           // push, release, bury, update
	body        string          // update
	unique      string          // push: a unique key
	uniqueFor   float64         // push: seconds the key is held
	uniqueMode  string          // push: reject, replace or debounce
	group       string          // push: the job's fair group
	timeout     float64         // pop
	ackPopped   bool            // pop: ack the job popped
	attempt     int64           // ack, release, bury, touch
	result      string          // ack: the result, a JSON value
	types       string          // watch: event types, comma-separated
	broker      string          // status: one broker's own status
	ctx         context.Context // ends the command (watch)
	out, errOut io.Writer
}

// The flags of the commands that have their own; each usage says what a
// value means and what leaving the flag out does.
func pushFlags(f *flag.FlagSet, c *call) {
	f.Float64Var(&c.delay, "delay", 0, "seconds before the job is ready (default 0: ready at once)")
	f.Float64Var(&c.ttr, "ttr", 0, "seconds a consumer has to ack the job before it is delivered again (default: the broker's [jobs] default_ttr)")
	f.Int64Var(&c.priority, "priority", 0, "0 to 4294967295, lower first (default: the broker's [jobs] default_priority)")
	f.StringVar(&c.unique, "unique", "", "a unique key: one job per key while it is held (with --unique-for; docs/topics.md)")
	f.Float64Var(&c.uniqueFor, "unique-for", 0, "seconds the unique key is held (needed with --unique)")
	f.StringVar(&c.uniqueMode, "unique-mode", "", "what a push does while the key is held: reject, replace or debounce (default reject)")
	f.StringVar(&c.group, "group", "", "the job's fair group: a grouped topic's pops take its groups in turn (default: none)")
}

func popFlags(f *flag.FlagSet, c *call) {
	f.Float64Var(&c.timeout, "timeout", 0, "seconds to wait for a job when none is ready (default 0: answer at once)")
	f.BoolVar(&c.ackPopped, "ack", false, "ack the job at once, as a finished one: it is printed and gone "+
		"(default: it stays reserved for its TTR, then is delivered again and counts as a failure unless acked)")
}

func attemptFlag(f *flag.FlagSet, c *call) {
	f.Int64Var(&c.attempt, "attempt", 0, "act only if the job is still on this delivery (pop shows its attempt); "+
		"after a later delivery the broker answers 409 and changes nothing (default, or 0: whatever delivery it is on)")
}

func ackFlags(f *flag.FlagSet, c *call) {
	attemptFlag(f, c)
	f.StringVar(&c.result, "result", "", `the job's result, a JSON value ('{"url":"/r/1"}', '42', '"done"'), kept where its topic keeps completed jobs (default: none)`)
}

func releaseFlags(f *flag.FlagSet, c *call) {
	attemptFlag(f, c)
	f.Float64Var(&c.delay, "delay", 0, "seconds before the job is ready again (default 0: ready at once)")
	f.Int64Var(&c.priority, "priority", 0, "a new priority, 0 to 4294967295, lower first (default: the job keeps its own)")
}

func updateFlags(f *flag.FlagSet, c *call) {
	f.Float64Var(&c.delay, "delay", 0, "seconds from now until the job is ready (0: ready at once; default: it keeps its due time)")
	f.Int64Var(&c.priority, "priority", 0, "a new priority, 0 to 4294967295, lower first (default: the job keeps its own)")
	f.StringVar(&c.body, "body", "", "a new body (default: the job keeps its own)")
}

func statusFlags(f *flag.FlagSet, c *call) {
	f.StringVar(&c.broker, "broker", "", `one broker's own status: its name (as "gmq status" lists it), or "this" for the one --url reaches (default: every broker's, the fleet's)`)
}

func buryFlags(f *flag.FlagSet, c *call) {
	attemptFlag(f, c)
	f.Int64Var(&c.priority, "priority", 0, "a new priority, 0 to 4294967295, lower first (default: the job keeps its own)")
}

// placeholders name each flag's value in the help (bool flags take none).
var placeholders = map[string]string{"url": "URL", "token": "T", "delay": "S", "ttr": "S", "timeout": "S",
	"priority": "N", "attempt": "N", "body": "B", "unique": "KEY", "unique-for": "S", "unique-mode": "M", "group": "G", "types": "LIST", "result": "JSON", "broker": "NAME"}

// sharedFlags are the flags every command takes, after its own.
var sharedFlags = []string{"url", "token", "json"}

// newFlags makes the flag set of cmd, writing into c.
func newFlags(cmd command, c *call) *flag.FlagSet {
	flags := flag.NewFlagSet(cmd.name, flag.ContinueOnError)
	flags.SetOutput(io.Discard)
	flags.Usage = func() {} // Run prints the help, to stdout
	if cmd.flags != nil {
		cmd.flags(flags, c)
	}
	flags.StringVar(&c.base, "url", envOr("GMQ_URL", defaultURL),
		"the broker's HTTP API; HOST:PORT alone means http://HOST:PORT (default: env GMQ_URL, else "+defaultURL+")")
	flags.StringVar(&c.token, "token", os.Getenv("GMQ_TOKEN"), "the API token, when the broker has one (default: env GMQ_TOKEN)")
	flags.BoolVar(&c.json, "json", false, "print the API's own JSON instead of a table")
	return flags
}

// parse reads a command's line. Flags may come anywhere: Go's flag package
// stops at the first argument that is not a flag, so it is asked again
// after each; after "--" everything is an argument (a BODY of "-x").
// flag.ErrHelp means -h or --help was on the line.
func parse(ctx context.Context, cmd command, args []string, out, errOut io.Writer) (*call, *flag.FlagSet, error) {
	c := &call{ctx: ctx, out: out, errOut: errOut, given: map[string]bool{}}
	flags := newFlags(cmd, c)
	for {
		if err := flags.Parse(args); err != nil {
			if err == flag.ErrHelp {
				return nil, flags, err
			}
			return nil, flags, usageError{err.Error()}
		}
		if flags.NArg() == 0 {
			break
		}
		if n := len(args) - flags.NArg(); n > 0 && args[n-1] == "--" {
			c.args = append(c.args, flags.Args()...)
			break
		}
		c.args = append(c.args, flags.Arg(0))
		args = flags.Args()[1:]
	}
	flags.Visit(func(f *flag.Flag) { c.given[f.Name] = true })
	if err := checkArgs(cmd, c.args); err != nil {
		return nil, flags, err
	}
	if err := c.checkFlags(); err != nil {
		return nil, flags, err
	}
	base, err := baseURL(c.base)
	if err != nil {
		return nil, flags, err
	}
	c.base = base
	return c, flags, nil
}

// checkArgs refuses too few or too many arguments.
func checkArgs(cmd command, args []string) error {
	switch n := len(args); {
	case n < cmd.nargs[0]:
		return usageError{fmt.Sprintf("%d argument(s), want %s", n, cmd.args)}
	case n > cmd.nargs[1]:
		return usageError{fmt.Sprintf("unexpected argument %q", args[cmd.nargs[1]])}
	}
	return nil
}

// maxSeconds is the API's bound on a delay, TTR or wait (beanstalkd's: an
// unsigned 32-bit count of seconds); maxPriority its bound on a priority,
// maxAttempt on an attempt.
const (
	maxSeconds  = math.MaxUint32
	maxPriority = math.MaxUint32
	maxAttempt  = math.MaxInt32
)

// checkFlags refuses a value the API would refuse, or that the flag's
// "left out" default would hide (a --ttr of -5 was once taken as "not
// given"), before anything is sent: every flag given must be in range.
func (c *call) checkFlags() error {
	checks := []struct {
		name string
		ok   func() error
	}{
		{"delay", func() error { return checkSeconds("--delay", c.delay) }},
		{"ttr", func() error { return checkSeconds("--ttr", c.ttr) }},
		{"timeout", func() error { return checkSeconds("--timeout", c.timeout) }},
		{"unique-for", func() error { return checkSeconds("--unique-for", c.uniqueFor) }},
		{"priority", func() error { return checkWhole("--priority", c.priority, maxPriority) }},
		{"attempt", func() error { return checkWhole("--attempt", c.attempt, maxAttempt) }},
	}
	for _, check := range checks {
		if c.given[check.name] {
			if err := check.ok(); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkSeconds refuses a number of seconds outside 0..maxSeconds (NaN and
// the infinities among them).
func checkSeconds(flag string, v float64) error {
	if !(v >= 0 && v <= maxSeconds) {
		return usageError{fmt.Sprintf("%s %v: want seconds from 0 to %d", flag, v, int64(maxSeconds))}
	}
	return nil
}

// checkWhole refuses a whole number outside 0..most.
func checkWhole(flag string, v, most int64) error {
	if v < 0 || v > most {
		return usageError{fmt.Sprintf("%s %d: want a whole number from 0 to %d", flag, v, most)}
	}
	return nil
}

// baseURL reads --url (or GMQ_URL) as the broker's base URL, without a
// trailing slash. A bare HOST:PORT is taken as http://HOST:PORT: Go's URL
// parser reads "localhost:8000" as the scheme "localhost" and
// "127.0.0.1:8000" not at all, and either failed with a parse error.
func baseURL(raw string) (string, error) {
	s := strings.TrimSpace(raw)
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", usageError{fmt.Sprintf("--url (or GMQ_URL) %q: want http://HOST:PORT, https://HOST:PORT or HOST:PORT", raw)}
	}
	return strings.TrimSuffix(u.String(), "/"), nil
}

// synopsis is cmd's usage line, every flag in it.
func synopsis(cmd command, flags *flag.FlagSet) string {
	var b strings.Builder
	b.WriteString(strings.TrimSpace("gmq " + cmd.name + " " + cmd.args))
	for _, f := range ordered(flags) {
		fmt.Fprintf(&b, " [--%s]", strings.TrimSpace(f.Name+" "+placeholders[f.Name]))
	}
	return b.String()
}

// help writes cmd's usage: what it does, its arguments, every flag and
// what it means.
func help(w io.Writer, cmd command, flags *flag.FlagSet) error {
	return PrintHelp(w, synopsis(cmd, flags), cmd.about+
		".\nFlags may come anywhere on the line, before the command too; after -- every word is an argument",
		ordered(flags), placeholders)
}

// PrintHelp writes a command's help in the format every gmq command
// shares (main's start uses it too): the usage line, what the command
// does, and each flag with what it means (PrintFlags).
func PrintHelp(w io.Writer, usage, about string, flags []*flag.Flag, placeholders map[string]string) error {
	if _, err := fmt.Fprintf(w, "usage: %s\n\n%s.\n\nflags:\n", usage, upperFirst(about)); err != nil {
		return err
	}
	return PrintFlags(w, flags, placeholders)
}

// ordered lists a command's flags, its own (by name) before the shared ones.
func ordered(flags *flag.FlagSet) []*flag.Flag {
	var own, shared []*flag.Flag
	flags.VisitAll(func(f *flag.Flag) {
		if !slices.Contains(sharedFlags, f.Name) {
			own = append(own, f)
		}
	})
	for _, name := range sharedFlags {
		shared = append(shared, flags.Lookup(name))
	}
	return append(own, shared...)
}

// PrintFlags writes one line a flag, "  --name VALUE  what it means" (one
// dash before a one-letter name: -c FILE), the VALUE from placeholders
// (none for a flag missing there).
func PrintFlags(w io.Writer, flags []*flag.Flag, placeholders map[string]string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, f := range flags {
		dashes := "--"
		if len(f.Name) == 1 {
			dashes = "-"
		}
		fmt.Fprintf(tw, "  %s%s\t%s\n", dashes, strings.TrimSpace(f.Name+" "+placeholders[f.Name]), f.Usage)
	}
	return tw.Flush()
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
