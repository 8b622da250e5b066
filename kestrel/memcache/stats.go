package memcache

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/gmq/gmq/internal/tcpserver"
	"github.com/gmq/gmq/job"
	failure "github.com/gmq/gmq/kestrel/answer"
)

// stats answers kestrel's STAT lines that gmq has: the server's, then
// queue_<name>_<stat> for each queue (the first StatsQueues by name).
func (c *conn) stats() {
	ctx, cancel := context.WithTimeout(c.Ctx, c.s.opts.RequestTimeout)
	defer cancel()
	st, err := c.s.d.Stats(ctx)
	if err != nil {
		c.line("SERVER_ERROR " + failure.Of(err).Message)
		return
	}
	topics, _, err := c.s.d.Topics(ctx, 0, c.s.opts.StatsQueues)
	if err != nil {
		c.line("SERVER_ERROR " + failure.Of(err).Message)
		return
	}
	stat := func(k string, v any) { fmt.Fprintf(c.W, "STAT %s %v\r\n", k, v) }
	stat("uptime", int64(time.Since(c.s.started).Seconds()))
	stat("time", time.Now().Unix())
	stat("version", c.s.opts.Version)
	var bytes int64
	for _, t := range topics {
		bytes += t.Bytes
	}
	stat("curr_items", st.Ready+st.Delayed+st.Reserved+st.Buried)
	stat("total_items", st.Jobs)
	stat("bytes", bytes)
	stat("curr_connections", c.s.Connections())
	for _, k := range []string{"total_connections", "cmd_get", "cmd_set", "cmd_peek", "get_hits", "get_misses"} {
		stat(k, c.s.counter(k))
	}
	stat("bytes_read", c.s.bytesRead.Load())
	stat("bytes_written", c.s.bytesWritten.Load())
	stat("queue_creates", st.QueueCreates)
	stat("queue_deletes", st.QueueDeletes)
	stat("queue_expires", st.QueueExpires)
	sort.Slice(topics, func(i, j int) bool { return topics[i].Name < topics[j].Name })
	for _, t := range topics {
		for _, kv := range c.queueStats(t) {
			stat("queue_"+t.Name+"_"+kv[0], kv[1])
		}
	}
	c.line("END")
}

// queueStats are a queue's stats under kestrel's names, in kestrel's order.
// gmq keeps no journal (logsize 0; Redis holds the jobs, all "in memory");
// age is how long the next item has waited, in ms; waiters are this broker's.
func (c *conn) queueStats(t job.TopicStats) [][2]string {
	items := t.Ready + t.Delayed + t.Buried
	n := strconv.FormatInt
	return [][2]string{
		{"items", n(items, 10)}, {"bytes", n(t.Bytes, 10)}, {"total_items", n(t.Jobs, 10)},
		{"logsize", "0"}, {"expired_items", n(t.Expired, 10)}, {"mem_items", n(items, 10)}, {"mem_bytes", n(t.Bytes, 10)},
		{"age", n(t.ReadyAge().Milliseconds(), 10)}, {"discarded", n(t.Discarded, 10)},
		{"waiters", strconv.Itoa(c.s.d.WaitingOn(t.Name))}, {"open_transactions", n(t.Reserved, 10)},
	}
}

// dumpStats answers every queue's stats (or the named queues'), grouped:
// queue '<name>' {, one "  key=value" line each, }, then END.
func (c *conn) dumpStats(names []string) error {
	ctx, cancel := context.WithTimeout(c.Ctx, c.s.opts.RequestTimeout)
	defer cancel()
	var topics []job.TopicStats
	if len(names) == 0 {
		all, _, err := c.s.d.Topics(ctx, 0, c.s.opts.StatsQueues)
		if err != nil {
			return &tcpserver.StoreErr{Op: "dump_stats", Err: err}
		}
		topics = all
	}
	for _, name := range names {
		t, found := job.TopicStats{}, false
		if job.ValidateTopic(name) == nil { // else no topic can have the name
			var err error
			if t, found, err = job.Found(c.s.d.Topic(name).Stats(ctx)); err != nil {
				return &tcpserver.StoreErr{Op: "dump_stats", Err: err}
			}
		}
		if !found {
			t = job.TopicStats{Name: name} // kestrel makes the queue it is asked about
		}
		topics = append(topics, t)
	}
	for _, t := range topics {
		c.line("queue '" + t.Name + "' {")
		for _, kv := range c.queueStats(t) {
			c.line("  " + kv[0] + "=" + kv[1])
		}
		c.line("}")
	}
	c.line("END")
	return nil
}
