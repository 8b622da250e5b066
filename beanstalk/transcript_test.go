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

func TestMain(m *testing.M) { brokertest.Main(m) }

func broker(t *testing.T) *brokertest.Broker {
	t.Helper()
	return brokertest.Fresh(t, nil)
}

// Framing and parsing: each line and the reply gmq must give, as beanstalkd does.
func TestParserTranscript(t *testing.T) {
	b := broker(t)
	w := dial(t, b.BeanstalkAddr)
	long := strings.Repeat("x", 230)
	steps := []struct{ send, want string }{
		{"\r\n", "UNKNOWN_COMMAND\r\n"},
		{"PUT 1 0 1 1\r\nx\r\n", "UNKNOWN_COMMAND\r\n"}, // then "x" is a command too
		{"", "UNKNOWN_COMMAND\r\n"},
		{"delete\r\n", "UNKNOWN_COMMAND\r\n"},
		{"peek\r\n", "UNKNOWN_COMMAND\r\n"},
		{"use\r\n", "UNKNOWN_COMMAND\r\n"},
		{"reserve-with-timeout\r\n", "BAD_FORMAT\r\n"},
		{"statsx\r\n", "BAD_FORMAT\r\n"},
		{"list-tubes extra\r\n", "BAD_FORMAT\r\n"},
		{"use a b\r\n", "BAD_FORMAT\r\n"},
		{"use -a\r\n", "BAD_FORMAT\r\n"},
		{"use a \r\n", "BAD_FORMAT\r\n"},
		{"use " + strings.Repeat("a", 201) + "\r\n", "BAD_FORMAT\r\n"},
		{"delete -1\r\n", "BAD_FORMAT\r\n"},
		{"delete 18446744073709551616\r\n", "BAD_FORMAT\r\n"},
		{"put 1 0 1 1 extra\r\n", "BAD_FORMAT\r\n"},
		{"x\r\n", "UNKNOWN_COMMAND\r\n"}, // the body of the bad put, read as a command
		{"put 4294967296 0 1 1\r\n", "BAD_FORMAT\r\n"},
		{long + "\r\n", "BAD_FORMAT\r\n"},
		{"put 1 0 1 3\r\nabcde", "EXPECTED_CRLF\r\n"}, // 3 bytes and "de" where CRLF belongs
		{"put 1 0 1 65536\r\n" + strings.Repeat("y", 65536) + "\r\n", "JOB_TOO_BIG\r\n"},
		{"delete 9999999\r\n", "NOT_FOUND\r\n"},
		{"use tube_1\r\n", "USING tube_1\r\n"},
		{"list-tube-used\r\n", "USING tube_1\r\n"},
		{"watch tube_1\r\n", "WATCHING 2\r\n"},
		{"watch tube_1\r\n", "WATCHING 2\r\n"},
		{"ignore default\r\n", "WATCHING 1\r\n"},
		{"ignore tube_1\r\n", "NOT_IGNORED\r\n"},
		{"ignore other\r\n", "WATCHING 1\r\n"},
		{"list-tubes-watched\r\n", "OK 13\r\n---\n- tube_1\n\r\n"},
		{"reserve-with-timeout 0\r\n", "TIMED_OUT\r\n"},
		{"peek-ready\r\n", "NOT_FOUND\r\n"},
		{"pause-tube nothing 1\r\n", "NOT_FOUND\r\n"},
		{"pause-tube tube_1 0\r\n", "PAUSED\r\n"},
		{"kick 5\r\n", "KICKED 0\r\n"},
	}
	for _, s := range steps {
		if s.send == "" {
			if got := w.reply(replyWait); got != s.want {
				t.Fatalf("after the previous line: got %q, want %q", got, s.want)
			}
			continue
		}
		w.must(s.send, s.want)
	}
	w.must("quit\r\n", "ERR EOF")
}

func TestJobCommands(t *testing.T) {
	b := broker(t)
	w := dial(t, b.BeanstalkAddr)
	id := w.put(5, 0, 10, "hello")
	w.must("peek-ready\r\n", fmt.Sprintf("FOUND %d 5\r\nhello\r\n", id))
	w.must(fmt.Sprintf("peek %d\r\n", id), fmt.Sprintf("FOUND %d 5\r\nhello\r\n", id))
	w.must("reserve\r\n", fmt.Sprintf("RESERVED %d 5\r\nhello\r\n", id))
	w.must(fmt.Sprintf("touch %d\r\n", id), "TOUCHED\r\n")
	w.must(fmt.Sprintf("release %d 7 0\r\n", id), "RELEASED\r\n")
	w.must(fmt.Sprintf("release %d 7 0\r\n", id), "NOT_FOUND\r\n")
	w.must("reserve-with-timeout 1\r\n", fmt.Sprintf("RESERVED %d 5\r\nhello\r\n", id))
	w.must(fmt.Sprintf("bury %d 3\r\n", id), "BURIED\r\n")
	w.must("peek-buried\r\n", fmt.Sprintf("FOUND %d 5\r\nhello\r\n", id))
	w.must("kick 10\r\n", "KICKED 1\r\n")
	w.must(fmt.Sprintf("reserve-job %d\r\n", id), fmt.Sprintf("RESERVED %d 5\r\nhello\r\n", id))
	stats := w.do(fmt.Sprintf("stats-job %d\r\n", id))
	for _, want := range []string{"state: reserved", "pri: 3", "ttr: 10", "reserves: 3", "releases: 1", "buries: 1", "kicks: 1", "tube: default"} {
		if !strings.Contains(stats, want+"\n") {
			t.Fatalf("stats-job lacks %q:\n%s", want, stats)
		}
	}
	other := dial(t, b.BeanstalkAddr)
	other.must(fmt.Sprintf("delete %d\r\n", id), "NOT_FOUND\r\n") // reserved by w
	other.must(fmt.Sprintf("release %d 1 0\r\n", id), "NOT_FOUND\r\n")
	w.must(fmt.Sprintf("delete %d\r\n", id), "DELETED\r\n")
	w.must(fmt.Sprintf("stats-job %d\r\n", id), "NOT_FOUND\r\n")
	delayed := w.put(1, 100, 10, "later")
	w.must("peek-delayed\r\n", fmt.Sprintf("FOUND %d 5\r\nlater\r\n", delayed))
	w.must(fmt.Sprintf("kick-job %d\r\n", delayed), "KICKED\r\n")
	w.must(fmt.Sprintf("kick-job %d\r\n", delayed), "NOT_FOUND\r\n")
}

// A connection that closes gives its reserved jobs back at once.
func TestCloseReleasesReservations(t *testing.T) {
	b := broker(t)
	w := dial(t, b.BeanstalkAddr)
	id := w.put(1, 0, 60, "x")
	w.must("reserve\r\n", fmt.Sprintf("RESERVED %d 1\r\nx\r\n", id))
	w.nc.Close()
	other := dial(t, b.BeanstalkAddr)
	other.must("reserve-with-timeout 60\r\n", fmt.Sprintf("RESERVED %d 1\r\nx\r\n", id)) // at once; 60: only a failure waits
}

// DEADLINE_SOON: a reserve issued in the last second of a reservation, and a
// reserve waiting when that second starts.
func TestDeadlineSoon(t *testing.T) {
	b := broker(t)
	w := dial(t, b.BeanstalkAddr)
	id := w.put(1, 0, 1, "x") // TTR 1: the whole TTR is margin
	w.must("reserve\r\n", fmt.Sprintf("RESERVED %d 1\r\nx\r\n", id))
	w.must("reserve-with-timeout 5\r\n", "DEADLINE_SOON\r\n")
	w.must(fmt.Sprintf("delete %d\r\n", id), "DELETED\r\n")
	id = w.put(1, 0, 2, "y")
	start := time.Now() // before the reserve: its last second begins at least 1 s after this
	w.must("reserve\r\n", fmt.Sprintf("RESERVED %d 1\r\ny\r\n", id))
	w.must("reserve-with-timeout 5\r\n", "DEADLINE_SOON\r\n")
	// DEADLINE_SOON rather than the job again says it came before the TTR
	// ran out; the upper bound only says it came, generous for a loaded machine.
	if took := time.Since(start); took < 800*time.Millisecond || took > 30*time.Second {
		t.Fatalf("DEADLINE_SOON after %v, want when the last second began (~1s)", took)
	}
}

// A reservation whose TTR runs out goes back to ready on time even while its
// connection is idle.
func TestTTRWhileIdle(t *testing.T) {
	b := broker(t)
	w := dial(t, b.BeanstalkAddr)
	id := w.put(1, 0, 1, "x")
	w.must("reserve\r\n", fmt.Sprintf("RESERVED %d 1\r\nx\r\n", id))
	other := dial(t, b.BeanstalkAddr)
	start := time.Now()
	other.must("reserve-with-timeout 60\r\n", fmt.Sprintf("RESERVED %d 1\r\nx\r\n", id))
	// Within the 1 s TTR and a timers' round (200 ms) on an idle machine;
	// 5 s past the TTR is the margin for a loaded one, far below the
	// reserve's 60 s timeout.
	if took := time.Since(start); took > 6*time.Second {
		t.Fatalf("redelivered after %v, want within the 1s TTR (+5s)", took)
	}
}

func TestDraining(t *testing.T) {
	b := broker(t)
	w := dial(t, b.BeanstalkAddr)
	b.Drain()
	w.must("put 1 0 1 1\r\nx\r\n", "DRAINING\r\n")
}

// Over [jobs] max_waiting, a reserve that would wait is refused.
func TestWaitingLimit(t *testing.T) {
	b := brokertest.Fresh(t, func(c *config.Config) { c.MaxWaiting = 1 })
	waiting := dial(t, b.BeanstalkAddr)
	// 5 s: long enough that it still waits when the second reserve comes,
	// on a loaded machine too.
	waiting.send("reserve-with-timeout 5\r\n")
	brokertest.Eventually(t, "the first reserve waiting", func() bool { return b.Dispatcher.WaitingOn("default") == 1 })
	dial(t, b.BeanstalkAddr).must("reserve-with-timeout 2\r\n", "OUT_OF_MEMORY\r\n")
	if got := waiting.reply(replyWait); got != "TIMED_OUT\r\n" {
		t.Fatalf("the waiting reserve: %q", got)
	}
}

// A topic's max_attempts over beanstalkd's protocol: each TTR that runs out
// is a failure, and past max_attempts the job is buried (gmq's dead state,
// beanstalkd's clients see buried), and kick brings it back.
func TestBuriedAfterMaxAttempts(t *testing.T) {
	b := brokertest.Fresh(t, func(c *config.Config) {
		c.Topics = map[string]job.TopicConfig{"flaky": {"max_attempts": "2"}}
	})
	w := dial(t, b.BeanstalkAddr)
	w.must("use flaky\r\n", "USING flaky\r\n")
	w.must("watch flaky\r\n", "WATCHING 2\r\n")
	id := w.put(0, 0, 1, "x")
	for range 2 {
		// The job again once its TTR ran out: at once, or after a timers'
		// round; 60 s only if it never comes back.
		if got := w.do("reserve-with-timeout 60\r\n"); !strings.HasPrefix(got, fmt.Sprintf("RESERVED %d ", id)) {
			t.Fatalf("reserve: %q", got)
		}
		time.Sleep(1200 * time.Millisecond) // the TTR runs out: a failure
	}
	// The timers count the second failure and bury it within a round, later
	// on a loaded machine.
	brokertest.Eventually(t, "the job buried after its second TTR", func() bool {
		return strings.Contains(w.do(fmt.Sprintf("stats-job %d\r\n", id)), "state: buried\n")
	})
	w.must("reserve-with-timeout 0\r\n", "TIMED_OUT\r\n")
	if got := w.do(fmt.Sprintf("stats-job %d\r\n", id)); !strings.Contains(got, "state: buried\n") || !strings.Contains(got, "timeouts: 2\n") {
		t.Fatalf("stats-job after two TTRs: %q", got)
	}
	if got := w.do("stats-tube flaky\r\n"); !strings.Contains(got, "current-jobs-buried: 1\n") {
		t.Fatalf("stats-tube: %q", got)
	}
	w.must("peek-buried\r\n", fmt.Sprintf("FOUND %d 1\r\nx\r\n", id))
	w.must("kick 1\r\n", "KICKED 1\r\n")
	if got := w.do("reserve-with-timeout 0\r\n"); !strings.HasPrefix(got, fmt.Sprintf("RESERVED %d ", id)) {
		t.Fatalf("reserve after the kick: %q", got)
	}
}
