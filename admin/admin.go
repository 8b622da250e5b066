// Package admin is gmq's command-line administration: `gmq stats`, `gmq
// topics`, `gmq job ID`, `gmq push T BODY`, `gmq ack ID`… Each command is a
// thin client of a broker's HTTP API (--url, --token, env GMQ_URL and
// GMQ_TOKEN): it owns parsing the command line and showing the answer, as a
// table for people or, with --json, the API's own JSON for scripts. Every
// failure is a clear message on stderr and a non-zero exit.
package admin

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// Exit codes.
const (
	ExitOK    = 0
	ExitError = 1 // the broker refused the command, or could not be reached
	ExitUsage = 2 // the command line is wrong
)

// usageError is a command line that Run cannot make sense of.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// command is one admin command: its arguments (positional and flags), what
// it is for, and what it asks the API and shows.
type command struct {
	name  string
	args  string // usage of the positional arguments
	nargs [2]int // at least, at most
	about string // one line for gmq help
	// flags defines the command's own flags on f, into c (nil: none but
	// the shared --url, --token and --json).
	flags func(f *flag.FlagSet, c *call)
	run   func(c *call) error
}

// commands are in the order gmq help lists them.
var commands = []command{
	{"stats", "", [2]int{0, 0}, "jobs by state, totals, consumers and connections, the server and its Redis", nil, stats},
	{"topics", "", [2]int{0, 0}, "every topic with its jobs by state", nil, topics},
	{"schedules", "", [2]int{0, 0}, "every cron schedule: its cron, next and last fire, fires and skips", nil, schedules},
	{"schedule", "NAME [pause|resume|fire]", [2]int{1, 2}, "one cron schedule; or pause it, resume it, or fire it now", nil, schedule},
	{"topic", "TOPIC", [2]int{1, 1}, "one topic's counts and settings", nil,
		func(c *call) error { return c.showMap("GET", "/topics/"+c.path(0), nil) }},
	{"batch", "ID [close|cancel]", [2]int{1, 2}, "one batch: its state and counts; or close it, or cancel it", nil, batch},
	{"dead", "TOPIC", [2]int{1, 1}, "a topic's dead jobs (the oldest 100)", nil, dead},
	{"completed", "TOPIC", [2]int{1, 1}, "a topic's completed jobs and their results (the newest 100; keep_completed)", nil, completed},
	{"watch", "TOPIC [TOPIC...]", [2]int{1, 100}, "print the topics' events as they happen (their setting events = true), until interrupted",
		watchFlags, watch},
	{"peek", "TOPIC [ready|delayed|buried]", [2]int{1, 2}, "a topic's next job in a state (ready by default), left in place", nil, peek},
	{"job", "ID", [2]int{1, 1}, "one job: its state, body, attempts and times", nil,
		func(c *call) error { return c.showMap("GET", "/jobs/"+c.path(0), nil) }},
	{"push", "TOPIC BODY", [2]int{2, 2}, "store a job; prints its id", pushFlags, push},
	{"pop", "TOPIC", [2]int{1, 1}, "reserve a job and show it (its id and attempt are for ack, release, bury, touch; --ack acks it at once)", popFlags, pop},
	{"ack", "ID", [2]int{1, 1}, "finish a reserved job: deleted, or completed where kept (keep_completed; keep_results for one with a result)", ackFlags, ack},
	{"release", "ID", [2]int{1, 1}, "give a reserved job back: ready again, or delayed", releaseFlags, release},
	{"bury", "ID", [2]int{1, 1}, "park a reserved job until it is kicked", buryFlags, bury},
	{"touch", "ID", [2]int{1, 1}, "give a reserved job its whole TTR again", attemptFlag, touch},
	{"update", "ID", [2]int{1, 1}, "change a ready or delayed job's delay, priority or body", updateFlags, update},
	{"kick", "TOPIC [N]", [2]int{1, 2}, "make up to N (default all) buried, else dead, else delayed jobs ready", nil, kick},
	{"pause", "TOPIC SECONDS", [2]int{2, 2}, "stop pops from a topic for SECONDS (0 resumes it)", nil, pause},
	{"delete", "ID", [2]int{1, 1}, "remove a job in any state", nil,
		func(c *call) error { return c.showMap("DELETE", "/jobs/"+c.path(0), nil) }},
	{"fail", "ID [REASON]", [2]int{1, 2}, "report that a job failed: retried by its policy, or dead", nil, fail},
	{"cancel", "ID", [2]int{1, 1}, "cancel a job: a waiting one at once, a reserved one at its consumer's next touch or ack", nil,
		func(c *call) error { return c.showMap("POST", "/jobs/"+c.path(0)+"/cancel", map[string]any{}) }},
	{"retry-dead", "TOPIC", [2]int{1, 1}, "make a topic's dead jobs ready again", nil, func(c *call) error {
		return c.showMap("POST", "/topics/"+c.path(0)+"/dead/retry", map[string]any{})
	}},
	{"status", "[up|writeavoid|readonly|quiescent]", [2]int{0, 1}, "read, or set, the status of every broker on the Redis (or with --broker one broker's own)", statusFlags, status},
}

// lookup finds the command called name.
func lookup(name string) (command, bool) {
	for _, cmd := range commands {
		if cmd.name == name {
			return cmd, true
		}
	}
	return command{}, false
}

// Known says whether name is an admin command.
func Known(name string) bool { _, ok := lookup(name); return ok }

// WriteUsage writes gmq's usage: a line for each of main's commands (rows:
// synopsis, what it does), then one for each admin command, aligned.
func WriteUsage(w io.Writer, rows [][2]string) error {
	width := 0
	for _, cmd := range commands {
		width = max(width, len(cmd.name)+1+len(cmd.args))
	}
	for _, row := range rows {
		width = max(width, len(row[0]))
	}
	var b strings.Builder
	b.WriteString("usage: gmq COMMAND [ARGUMENTS] [FLAGS]\n" +
		"Flags may come anywhere on the line; gmq help COMMAND (or gmq COMMAND --help) lists a command's flags.\n\n")
	for _, row := range rows {
		fmt.Fprintf(&b, "  %-*s  %s\n", width, row[0], row[1])
	}
	b.WriteString("\nAdministration, through a broker's HTTP API: each command takes --url URL (env GMQ_URL, default " + defaultURL +
		";\nHOST:PORT alone means http://HOST:PORT), --token T (env GMQ_TOKEN) and --json (the API's own JSON).\n")
	for _, cmd := range commands {
		fmt.Fprintf(&b, "  %-*s  %s\n", width, strings.TrimSpace(cmd.name+" "+cmd.args), cmd.about)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Run runs the admin command name with its arguments, writing the answer
// to out and any failure to errOut, and returns the exit code. -h or
// --help anywhere prints the command's usage and every flag to out.
func Run(name string, args []string, out, errOut io.Writer) int {
	return RunContext(context.Background(), name, args, out, errOut)
}

// RunContext is Run until ctx ends: a command that runs until interrupted
// (gmq watch) ends then too, and succeeds.
func RunContext(ctx context.Context, name string, args []string, out, errOut io.Writer) int {
	cmd, ok := lookup(name)
	if !ok {
		fmt.Fprintf(errOut, "gmq: unknown command %q\n", name)
		return ExitUsage
	}
	c, flags, err := parse(ctx, cmd, args, out, errOut)
	if errors.Is(err, flag.ErrHelp) {
		err = help(out, cmd, flags)
	} else if err == nil {
		err = cmd.run(c)
	}
	var usage usageError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &usage):
		fmt.Fprintf(errOut, "gmq %s: %v\nusage: %s\n(gmq %s --help says what each flag means)\n", name, err, synopsis(cmd, flags), name)
		return ExitUsage
	default:
		fmt.Fprintf(errOut, "gmq %s: %v\n", name, err)
		return ExitError
	}
}

// Split finds the command in a gmq command line that may begin with the
// shared admin flags (`gmq --json stats`, `gmq --url=http://x:8000 topics`):
// it returns the first argument that is not one of them (the command, or
// "" when there is none) and the rest of the line, those flags moved to its
// front so the command reads them as its own. Any other flag ends the
// search and is returned as the name (-h, --version…) for main to judge.
func Split(args []string) (name string, rest []string, err error) {
	var shared []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		key, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch {
		case a == "--":
			if i+1 < len(args) {
				return args[i+1], append(shared, args[i+2:]...), nil
			}
			return "", shared, nil
		case !strings.HasPrefix(a, "-") || a == "-":
			return a, append(shared, args[i+1:]...), nil
		case key == "json":
			shared = append(shared, a)
		case key == "url" || key == "token":
			if hasValue {
				shared = append(shared, a)
				continue
			}
			if i+1 == len(args) {
				return "", nil, usageError{"flag needs an argument: " + a}
			}
			shared = append(shared, a, args[i+1])
			i++
		default:
			return a, append(shared, args[i+1:]...), nil
		}
	}
	return "", shared, nil
}
