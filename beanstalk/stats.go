package beanstalk

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gmq/gmq/internal/tcpserver"
	"github.com/gmq/gmq/job"
)

// replyYAML sends "OK <bytes>\r\n" and the YAML document.
func (c *conn) replyYAML(doc string) {
	c.replyf("OK %d\r\n%s\r\n", len(doc), doc)
}

func (c *conn) replyYAMLList(names []string) {
	var b strings.Builder
	b.WriteString("---\n")
	for _, n := range names {
		b.WriteString("- " + n + "\n")
	}
	c.replyYAML(b.String())
}

// yaml builds a "key: value" document in the order the keys are added.
type yaml struct{ b strings.Builder }

func newYAML() *yaml {
	y := &yaml{}
	y.b.WriteString("---\n")
	return y
}

func (y *yaml) add(key string, v any) *yaml {
	fmt.Fprintf(&y.b, "%s: %v\n", key, v)
	return y
}

func (y *yaml) String() string { return y.b.String() }

// addLimits adds a tube's flow-control figures, gmq's extra keys of
// stats-tube, when it has a limit: its rate and burst and the tokens left,
// its max-reserved (current-jobs-reserved is the count against it), and the
// reserves its limits held back.
func (y *yaml) addLimits(t job.TopicStats) *yaml {
	limited := false
	for _, k := range []string{"rate", "burst", "max_reserved"} {
		if v := t.Settings[k]; v != "" && v != "0" {
			y.add(strings.ReplaceAll(k, "_", "-"), v)
			limited = true
		}
	}
	if tokens, ok := t.RateTokens(); ok {
		y.add("tokens", tokens)
	}
	if limited || t.Limited > 0 {
		y.add("total-limited", t.Limited).add("limited-seconds", secs(t.LimitedTime))
	}
	return y
}

// allTubes returns the stats of every topic the store holds, and the names
// of the tubes that exist as beanstalkd counts them: "default" first, then
// by name every tube that holds a job or that a connection here uses or
// watches. beanstalkd frees a tube when its last job and its last
// connection leave it; gmq keeps the emptied topic in Redis (its counters,
// settings and pause), and a listing must not delete it, so the listing
// filters instead. Only this server's connections are known: a tube that a
// connection to another broker on the same Redis uses, and no job holds, is
// not listed here.
func (c *conn) allTubes(ctx context.Context) ([]job.TopicStats, []string, error) {
	stats, _, err := c.s.d.Topics(ctx, 0, math.MaxInt32)
	if err != nil {
		return nil, nil, err
	}
	live := map[string]bool{"default": true}
	for _, t := range stats {
		if holdsJobs(t) {
			live[t.Name] = true
		}
	}
	c.s.mu.Lock()
	for t := range c.s.tubes {
		live[t] = true
	}
	c.s.mu.Unlock()
	names := make([]string, 0, len(live))
	for t := range live {
		if t != "default" {
			names = append(names, t)
		}
	}
	slices.Sort(names)
	return stats, append([]string{"default"}, names...), nil
}

// holdsJobs says whether a topic has a job in any state: ready, reserved,
// delayed, buried or dead (buried to beanstalkd). Such a topic is a tube
// that exists whoever refers to it.
func holdsJobs(t job.TopicStats) bool {
	return t.Ready+t.Reserved+t.Delayed+t.Buried+t.Dead > 0
}

func (c *conn) listTubes(ctx context.Context) error {
	_, names, err := c.allTubes(ctx)
	if err != nil {
		return err
	}
	c.replyYAMLList(names)
	return nil
}

func secs(d time.Duration) int64 { return int64(d / time.Second) }

// secsLeft renders a time left as beanstalkd does: whole seconds, rounded
// down. beanstalkd's clock counts nanoseconds, so right after a reserve with
// TTR 10 it reads 9.99... s left and prints 9; gmq's counts whole
// milliseconds, so in the same millisecond it read exactly 10 s and printed
// 10. A time left read as d is really in (d-1ms, d]: take the millisecond off
// before rounding down.
func secsLeft(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d - time.Millisecond) / time.Second)
}

// protocolVersion is the beanstalkd version whose protocol gmq speaks, which
// stats reports: clients parse it (Perl's Beanstalk::Client dies on a version
// it cannot read; fivebeans skips kick-job below 1.8). gmq's own version is
// in the HTTP API's stats and "gmq version".
const protocolVersion = "1.12"

// beanstalkState is a job's state as beanstalkd's clients know them: a dead
// job (failed past max_attempts) is buried, beanstalkd's own dead state, and
// kick makes it ready as it does a buried one.
func beanstalkState(s job.State) job.State {
	if s == job.Dead {
		return job.Buried
	}
	return s
}

func (c *conn) statsJob(ctx context.Context, id uint64) error {
	j, err := c.peek(ctx, id)
	if err != nil {
		return err
	}
	c.replyYAML(newYAML().
		add("id", j.ID).add("tube", j.Topic).add("state", beanstalkState(j.State)).add("pri", j.Priority).
		add("age", secs(j.Age())).add("delay", secs(j.Delay)).add("ttr", secs(j.TTR)).
		add("time-left", secsLeft(j.TimeLeft())).add("file", 0).add("reserves", j.Reserves).
		add("timeouts", j.Timeouts).add("releases", j.Releases).add("buries", j.Buries).
		add("kicks", j.Kicks).String())
	return nil
}

// tube reads a tube as beanstalkd knows it: its stats and this server's
// references to it, and whether it exists. It exists while a connection
// here uses or watches it or a job is in it, and "default" always
// (beanstalkd never frees it); one that exists before the store has held a
// job of it reads as zeros. An emptied topic that no connection here
// refers to does not exist, as beanstalkd has freed it, though gmq keeps
// it in Redis (see allTubes).
func (c *conn) tube(ctx context.Context, name string) (t job.TopicStats, refs tubeRefs, exists bool, err error) {
	t, known, err := job.Found(c.s.d.Topic(name).Stats(ctx))
	refs, referenced := c.s.refs(name)
	exists = referenced || name == "default"
	switch {
	case err != nil:
		return t, refs, false, err
	case !known && exists:
		return job.TopicStats{Name: name}, refs, true, nil
	case !known, !exists && !holdsJobs(t):
		return job.TopicStats{}, refs, false, nil
	}
	return t, refs, true, nil
}

func (c *conn) statsTube(ctx context.Context, name string) error {
	t, refs, exists, err := c.tube(ctx, name)
	if err != nil {
		return err
	}
	if !exists {
		return fmt.Errorf("tube %q: %w", name, job.ErrNotFound) // NOT_FOUND
	}
	c.replyYAML(newYAML().
		add("name", t.Name).add("current-jobs-urgent", t.Urgent).add("current-jobs-ready", t.Ready).
		add("current-jobs-reserved", t.Reserved).add("current-jobs-delayed", t.Delayed).
		add("current-jobs-buried", t.Buried+t.Dead).add("total-jobs", t.Jobs).
		add("current-using", refs.using).add("current-watching", refs.watching).
		add("current-waiting", refs.waiting).add("cmd-delete", t.Deletes).
		add("cmd-pause-tube", t.Pauses).add("pause", secs(t.Pause)).
		add("pause-time-left", secsLeft(t.PauseLeft())).
		addLimits(t).String())
	return nil
}

// cmdStats are the cmd-* counters stats prints, in beanstalkd's order.
var cmdStats = []string{"cmd-put", "cmd-peek", "cmd-peek-ready", "cmd-peek-delayed", "cmd-peek-buried",
	"cmd-reserve", "cmd-reserve-with-timeout", "cmd-delete", "cmd-release", "cmd-use", "cmd-watch",
	"cmd-ignore", "cmd-bury", "cmd-kick", "cmd-touch", "cmd-stats", "cmd-stats-job", "cmd-stats-tube",
	"cmd-list-tubes", "cmd-list-tube-used", "cmd-list-tubes-watched", "cmd-pause-tube"}

func (c *conn) stats(ctx context.Context) error {
	st, err := c.s.d.Stats(ctx)
	if err != nil {
		return err
	}
	topics, names, err := c.allTubes(ctx)
	if err != nil {
		return err
	}
	var urgent int64
	for _, t := range topics {
		urgent += t.Urgent
	}
	y := newYAML().add("current-jobs-urgent", urgent).add("current-jobs-ready", st.Ready).
		add("current-jobs-reserved", st.Reserved).add("current-jobs-delayed", st.Delayed).
		add("current-jobs-buried", st.Buried+st.Dead)
	c.s.mu.Lock()
	for _, k := range cmdStats {
		y.add(k, c.s.counters[k])
	}
	others := make([]counted, 0, len(c.s.conns))
	for other := range c.s.conns {
		others = append(others, counted{other.nc, other == c, other.producer.Load(), other.worker.Load()})
	}
	waiting, total := c.s.waiting, c.s.totalConns
	c.s.mu.Unlock()
	conns, producers, workers := countOpen(others)
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		c.s.log.Warn("beanstalk: getrusage", "err", err)
	}
	var un syscall.Utsname
	if err := syscall.Uname(&un); err != nil {
		c.s.log.Warn("beanstalk: uname", "err", err)
	}
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	y.add("job-timeouts", st.Timeouts).add("total-jobs", st.Jobs).add("max-job-size", c.s.opts.MaxJobSize).
		add("current-tubes", len(names)).add("current-connections", conns).add("current-producers", producers).
		add("current-workers", workers).add("current-waiting", waiting).add("total-connections", total).
		add("pid", os.Getpid()).add("version", strconv.Quote(protocolVersion)).
		add("rusage-utime", fmt.Sprintf("%d.%06d", ru.Utime.Sec, ru.Utime.Usec)).
		add("rusage-stime", fmt.Sprintf("%d.%06d", ru.Stime.Sec, ru.Stime.Usec)).
		add("uptime", secs(time.Since(c.s.started))).
		add("binlog-oldest-index", 0).add("binlog-current-index", 0).add("binlog-records-migrated", 0).
		add("binlog-records-written", 0).add("binlog-max-size", 10485760).
		add("draining", c.s.d.Status().Announced() >= job.ReadOnly).add("id", c.s.instance).add("hostname", host).
		add("os", utsString(un.Version[:])).add("platform", utsString(un.Machine[:]))
	c.replyYAML(y.String())
	return nil
}

// counted is a connection as stats counts it.
type counted struct {
	nc                     net.Conn
	self, producer, worker bool
}

// countOpen counts the connections, producers and workers whose client has
// not closed its end: one that closed but whose goroutine has not yet seen
// its EOF is counted out (tcpserver.PeerGone), as beanstalkd would have. The
// connection asking is always counted, even when it closed after sending
// stats. Each is probed outside the server's lock: a syscall each.
func countOpen(cs []counted) (conns, producers, workers int) {
	for _, o := range cs {
		if !o.self && tcpserver.PeerGone(o.nc) {
			continue
		}
		conns++
		if o.producer {
			producers++
		}
		if o.worker {
			workers++
		}
	}
	return conns, producers, workers
}

func utsString(field []int8) string {
	b := make([]byte, 0, len(field))
	for _, c := range field {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return string(b)
}

// newInstanceID is the random id stats reports for this server.
func newInstanceID() string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "0000000000000000"
	}
	return hex.EncodeToString(b)
}
