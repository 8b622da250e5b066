// Package admin is gmq's command-line administration: `gmq stats`, `gmq
// topics`, `gmq job ID`, `gmq push T BODY`… Each command is a thin client
// of a broker's HTTP API (--url, --token, env GMQ_URL and GMQ_TOKEN): it
// owns parsing the command line and showing the answer, as a table for
// people or, with --json, the API's own JSON for scripts. Every failure is
// a clear message on stderr and a non-zero exit.
package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Commands lists the commands Run knows, for main's usage text.
const Commands = `  gmq stats | topics | topic T | dead T | peek T [ready|delayed|buried] | job ID
  gmq push T BODY [--delay S] [--ttr S] [--priority N] | pop T [--timeout S]
  gmq kick T [N] | pause T SECONDS | delete ID | fail ID [REASON] | retry-dead T
  gmq status [up|writeavoid|readonly|quiescent]
        (each: [--url URL] [--token T] [--json]; env GMQ_URL, GMQ_TOKEN)`

// Exit codes.
const (
	ExitOK    = 0
	ExitError = 1 // the broker refused the command, or could not be reached
	ExitUsage = 2 // the command line is wrong
)

// usageError is a command line that Run cannot make sense of.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// command is one admin command: its arguments (positional and flags), and
// what it asks the API and shows.
type command struct {
	args  string // usage of the positional arguments
	nargs [2]int // at least, at most
	run   func(c *call) error
}

var commands = map[string]command{
	"stats":  {"", [2]int{0, 0}, func(c *call) error { return c.showMap("GET", "/stats", nil) }},
	"topics": {"", [2]int{0, 0}, topics},
	"topic":  {"TOPIC", [2]int{1, 1}, func(c *call) error { return c.showMap("GET", "/topics/"+c.path(0), nil) }},
	"dead":   {"TOPIC", [2]int{1, 1}, dead},
	"peek":   {"TOPIC [ready|delayed|buried]", [2]int{1, 2}, peek},
	"job":    {"ID", [2]int{1, 1}, func(c *call) error { return c.showMap("GET", "/jobs/"+c.path(0), nil) }},
	"push":   {"TOPIC BODY", [2]int{2, 2}, push},
	"pop":    {"TOPIC", [2]int{1, 1}, pop},
	"kick":   {"TOPIC [N]", [2]int{1, 2}, kick},
	"pause":  {"TOPIC SECONDS", [2]int{2, 2}, pause},
	"delete": {"ID", [2]int{1, 1}, func(c *call) error { return c.showMap("DELETE", "/jobs/"+c.path(0), nil) }},
	"fail":   {"ID [REASON]", [2]int{1, 2}, fail},
	"retry-dead": {"TOPIC", [2]int{1, 1}, func(c *call) error {
		return c.showMap("POST", "/topics/"+c.path(0)+"/dead/retry", map[string]any{})
	}},
	"status": {"[up|writeavoid|readonly|quiescent]", [2]int{0, 1}, status},
}

// Known says whether name is an admin command.
func Known(name string) bool { _, ok := commands[name]; return ok }

// Run runs the admin command name with its arguments, writing the answer
// to out and any failure to errOut, and returns the exit code.
func Run(name string, args []string, out, errOut io.Writer) int {
	cmd, ok := commands[name]
	if !ok {
		fmt.Fprintf(errOut, "gmq: unknown command %q\n", name)
		return ExitUsage
	}
	c, err := parse(name, cmd, args, out)
	if err == nil {
		err = cmd.run(c)
	}
	var usage usageError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &usage):
		fmt.Fprintf(errOut, "gmq %s: %v\nusage: gmq %s %s [--url URL] [--token T] [--json]\n", name, err, name, cmd.args)
		return ExitUsage
	default:
		fmt.Fprintf(errOut, "gmq %s: %v\n", name, err)
		return ExitError
	}
}

// call is one command's parsed line and its connection to the API.
type call struct {
	base, token string
	json        bool
	args        []string
	delay, ttr  float64 // push
	priority    int64   // push; -1: the broker's default
	timeout     float64 // pop
	out         io.Writer
}

// parse reads the flags wherever they are on the line (Go's flag package
// stops at the first argument, so it is asked again after each).
func parse(name string, cmd command, args []string, out io.Writer) (*call, error) {
	c := &call{out: out, priority: -1}
	flags := flag.NewFlagSet(name, flag.ContinueOnError)
	flags.SetOutput(io.Discard)
	flags.StringVar(&c.base, "url", envOr("GMQ_URL", "http://127.0.0.1:8000"), "the broker's HTTP API")
	flags.StringVar(&c.token, "token", os.Getenv("GMQ_TOKEN"), "the API token")
	flags.BoolVar(&c.json, "json", false, "print the API's JSON")
	if name == "push" {
		flags.Float64Var(&c.delay, "delay", 0, "seconds before the job is ready")
		flags.Float64Var(&c.ttr, "ttr", -1, "seconds a consumer has (the broker's default when left out)")
		flags.Int64Var(&c.priority, "priority", -1, "0..4294967295, lower first")
	}
	if name == "pop" {
		flags.Float64Var(&c.timeout, "timeout", 0, "seconds to wait for a job")
	}
	for {
		if err := flags.Parse(args); err != nil {
			return nil, usageError{err.Error()}
		}
		if flags.NArg() == 0 {
			break
		}
		c.args = append(c.args, flags.Arg(0))
		args = flags.Args()[1:]
	}
	if n := len(c.args); n < cmd.nargs[0] || n > cmd.nargs[1] {
		return nil, usageError{fmt.Sprintf("%d arguments, want %s", n, cmd.args)}
	}
	if err := c.checkFlags(flags); err != nil {
		return nil, err
	}
	c.base = strings.TrimSuffix(c.base, "/")
	return c, nil
}

// maxSeconds is the API's bound on a delay, TTR or wait (beanstalkd's: an
// unsigned 32-bit count of seconds); maxPriority its bound on a priority.
const (
	maxSeconds  = math.MaxUint32
	maxPriority = math.MaxUint32
)

// checkFlags refuses a value the API would refuse, or that the flag's
// "left out" default would hide (a --ttr of -5 was taken as "not given"),
// before anything is sent: every flag given must be in range.
func (c *call) checkFlags(flags *flag.FlagSet) error {
	var err error
	flags.Visit(func(f *flag.Flag) {
		if err != nil {
			return
		}
		switch f.Name {
		case "delay":
			err = checkSeconds("--delay", c.delay)
		case "ttr":
			err = checkSeconds("--ttr", c.ttr)
		case "timeout":
			err = checkSeconds("--timeout", c.timeout)
		case "priority":
			if c.priority < 0 || c.priority > maxPriority {
				err = usageError{fmt.Sprintf("--priority %d: want a whole number from 0 to %d", c.priority, int64(maxPriority))}
			}
		}
	})
	return err
}

// checkSeconds refuses a number of seconds outside 0..maxSeconds (NaN and
// the infinities among them).
func checkSeconds(flag string, v float64) error {
	if !(v >= 0 && v <= maxSeconds) {
		return usageError{fmt.Sprintf("%s %v: want seconds from 0 to %d", flag, v, int64(maxSeconds))}
	}
	return nil
}

// path is the i-th argument as a path segment.
func (c *call) path(i int) string { return url.PathEscape(c.args[i]) }

// do sends a request to the API and decodes its JSON answer (nil for none).
// An answer that is not a success is an error with the broker's reason.
func (c *call) do(method, path string, body any) (any, error) {
	var reader io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		reader = bytes.NewReader(data)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(c.timeout*float64(time.Second))+10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.base+"/api/v1"+path, reader)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("the broker at %s: %w", c.base, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, err
	}
	var answer any
	if len(bytes.TrimSpace(data)) > 0 {
		if err := json.Unmarshal(data, &answer); err != nil {
			return nil, fmt.Errorf("%s: %s, not JSON", req.URL, resp.Status)
		}
	}
	if resp.StatusCode >= 300 {
		msg := resp.Status
		if m, ok := answer.(map[string]any); ok && m["error"] != nil {
			msg = fmt.Sprintf("%d: %v", resp.StatusCode, m["error"])
		}
		return nil, errors.New(msg)
	}
	return answer, nil
}

// showMap asks the API and shows its answer, an object, as key: value lines.
func (c *call) showMap(method, path string, body any) error {
	answer, err := c.do(method, path, body)
	if err != nil {
		return err
	}
	return c.show(answer, func(w io.Writer) { writeMap(w, answer) })
}

// show prints answer as JSON with --json, else as table does.
func (c *call) show(answer any, table func(io.Writer)) error {
	if c.json {
		enc := json.NewEncoder(c.out)
		enc.SetIndent("", "  ")
		return enc.Encode(answer)
	}
	w := tabwriter.NewWriter(c.out, 0, 4, 2, ' ', 0)
	table(w)
	return w.Flush()
}

// writeMap writes an object's fields sorted by name, one a line.
func writeMap(w io.Writer, v any) {
	m, _ := v.(map[string]any)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "%s\t%s\n", k, text(m[k]))
	}
}

// text renders a JSON value for a table cell.
func text(v any) string {
	switch x := v.(type) {
	case nil:
		return "-"
	case string:
		q := strconv.Quote(x) // control characters escaped: a body cannot move the cursor
		return q[1 : len(q)-1]
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case map[string]any, []any:
		data, _ := json.Marshal(x)
		return string(data)
	default:
		return fmt.Sprint(x)
	}
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
