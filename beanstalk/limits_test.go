package beanstalk_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
	"github.com/gmq/gmq/job"
)

// A tube's max_reserved holds a reserve back while that many of its jobs
// are reserved, a delete frees the slot for the reserve waiting on it, and
// stats-tube shows the limit and the reserves it held back (gmq's extra keys).
func TestMaxReservedOverBeanstalkd(t *testing.T) {
	b := brokertest.Fresh(t, func(c *config.Config) {
		c.Topics = map[string]job.TopicConfig{"one": {"max_reserved": "1"}, "paced": {"rate": "2", "burst": "1"}}
	})
	w := dial(t, b.BeanstalkAddr)
	w.must("use one\r\n", "USING one\r\n")
	w.must("watch one\r\n", "WATCHING 2\r\n")
	first := w.put(0, 0, 60, "a")
	second := w.put(0, 0, 60, "b")
	if got := w.do("reserve-with-timeout 0\r\n"); !strings.HasPrefix(got, fmt.Sprintf("RESERVED %d ", first)) {
		t.Fatalf("reserve: %q", got)
	}
	other := dial(t, b.BeanstalkAddr)
	other.must("watch one\r\n", "WATCHING 2\r\n")
	other.must("reserve-with-timeout 0\r\n", "TIMED_OUT\r\n") // held back: one is reserved
	got := make(chan string, 1)
	go func() { got <- other.do("reserve-with-timeout 60\r\n") }() // 60: only a failure waits it out
	brokertest.Eventually(t, "the reserve waiting", func() bool { return b.Dispatcher.WaitingOn("one") == 1 })
	w.must(fmt.Sprintf("delete %d\r\n", first), "DELETED\r\n")
	select {
	case r := <-got:
		if !strings.HasPrefix(r, fmt.Sprintf("RESERVED %d ", second)) {
			t.Fatalf("the waiting reserve: %q", r)
		}
	case <-time.After(90 * time.Second):
		t.Fatal("the delete did not wake the waiting reserve")
	}
	stats := w.do("stats-tube one\r\n")
	// Each pop a limit held back counts: the reserve that timed out, and the
	// waiting one's looks before the delete.
	for _, want := range []string{"current-jobs-reserved: 1\n", "max-reserved: 1\n", "total-limited: ", "limited-seconds: 0\n"} {
		if !strings.Contains(stats, want) {
			t.Errorf("stats-tube one lacks %q: %q", want, stats)
		}
	}
	if strings.Contains(stats, "total-limited: 0\n") {
		t.Errorf("stats-tube one counts no held-back reserve: %q", stats)
	}

	w.must("use paced\r\n", "USING paced\r\n")
	w.must("watch paced\r\n", "WATCHING 3\r\n")
	w.must("ignore one\r\n", "WATCHING 2\r\n")
	w.put(0, 0, 60, "c")
	stats = w.do("stats-tube paced\r\n")
	for _, want := range []string{"rate: 2\n", "burst: 1\n", "tokens: 1\n", "total-limited: 0\n"} {
		if !strings.Contains(stats, want) {
			t.Errorf("stats-tube paced lacks %q: %q", want, stats)
		}
	}
}

// A tube with unique_from = body keeps one job per body: a second put of the
// same body answers INSERTED with the first job's id (beanstalkd has no word
// for a refusal), and a replace gives the waiting job the new priority.
func TestUniqueFromBodyOverBeanstalkd(t *testing.T) {
	b := brokertest.Fresh(t, func(c *config.Config) {
		c.Topics = map[string]job.TopicConfig{"dedup": {"unique_from": "body", "unique_for": "60"},
			"latest": {"unique_from": "body", "unique_mode": "replace"}}
	})
	w := dial(t, b.BeanstalkAddr)
	w.must("use dedup\r\n", "USING dedup\r\n")
	first := w.put(0, 0, 60, "same")
	if again := w.put(0, 0, 60, "same"); again != first {
		t.Fatalf("the same body again: job %d, want %d", again, first)
	}
	if other := w.put(0, 0, 60, "other"); other == first {
		t.Fatalf("another body: job %d, the first's id", other)
	}
	w.must("use latest\r\n", "USING latest\r\n")
	held := w.put(100, 30, 60, "x")
	if again := w.put(5, 0, 60, "x"); again != held {
		t.Fatalf("replace: job %d, want %d", again, held)
	}
	stats := w.do(fmt.Sprintf("stats-job %d\r\n", held))
	for _, want := range []string{"pri: 5\n", "state: ready\n"} {
		if !strings.Contains(stats, want) {
			t.Errorf("the replaced job's stats lack %q: %q", want, stats)
		}
	}
	stats = w.do("stats-tube dedup\r\n")
	if !strings.Contains(stats, "current-jobs-ready: 2\n") {
		t.Errorf("stats-tube dedup: %q, want 2 ready", stats)
	}
}

// A tube with group_from takes a put's group from its JSON body: reserves
// take the groups in turn.
func TestGroupFromOverBeanstalkd(t *testing.T) {
	b := brokertest.Fresh(t, func(c *config.Config) {
		c.Topics = map[string]job.TopicConfig{"fair": {"group_from": "tenant"}}
	})
	w := dial(t, b.BeanstalkAddr)
	w.must("use fair\r\n", "USING fair\r\n")
	w.must("watch fair\r\n", "WATCHING 2\r\n")
	for _, body := range []string{`{"tenant":"a","n":1}`, `{"tenant":"a","n":2}`, `{"tenant":"a","n":3}`, `{"tenant":"b","n":1}`} {
		w.put(0, 0, 60, body)
	}
	var order []string
	for range 4 {
		got := w.do("reserve-with-timeout 0\r\n")
		lines := strings.Split(got, "\r\n")
		if len(lines) < 2 {
			t.Fatalf("reserve: %q", got)
		}
		order = append(order, lines[1])
	}
	if order[0] != `{"tenant":"a","n":1}` || order[1] != `{"tenant":"b","n":1}` {
		t.Fatalf("reserved in the order %q, want a's first, then b's", order)
	}
}
