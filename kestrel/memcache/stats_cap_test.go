package memcache_test

import (
	"io"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
)

// stats and dump_stats list the first [metrics] max_topics queues by name,
// each a read of Redis, so that 200,000 queues cost what 250 do; a queue
// named to dump_stats is answered wherever it sorts.
func TestStatsListTheFirstQueues(t *testing.T) {
	b := brokertest.Fresh(t, func(c *config.Config) { c.MetricsMaxTopics = 2 })
	w := dial(t, b.KestrelAddr)
	for _, q := range []string{"c", "a", "b"} {
		w.set(q, "x")
	}
	statQueues := regexp.MustCompile(`STAT queue_([a-z]+)_items `)
	var listed []string
	for _, m := range statQueues.FindAllStringSubmatch(w.do("stats\r\n"), -1) {
		listed = append(listed, m[1])
	}
	if !slices.Equal(listed, []string{"a", "b"}) {
		t.Errorf("stats listed queues %q, want the first two by name", listed)
	}
	for _, tc := range []struct{ send, want string }{
		{"dump_stats\r\n", "a b"},
		{"dump_stats c\r\n", "c"},
	} {
		if got := dumped(t, w, tc.send); got != tc.want {
			t.Errorf("%q listed %q, want %q", tc.send, got, tc.want)
		}
	}
}

// dumped sends a dump_stats and returns the queues it grouped, in order.
func dumped(t *testing.T, w *wire, send string) string {
	t.Helper()
	if _, err := io.WriteString(w.NC, send); err != nil {
		t.Fatal(err)
	}
	var queues []string
	for {
		line := w.reply()
		if q, ok := strings.CutPrefix(line, "queue '"); ok {
			queues = append(queues, strings.TrimSuffix(q, "' {\r\n"))
		}
		if line == "END\r\n" || line == "EOF" || strings.HasPrefix(line, "ERR") {
			return strings.Join(queues, " ")
		}
	}
}
