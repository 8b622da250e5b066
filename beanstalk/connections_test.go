package beanstalk_test

import (
	"regexp"
	"testing"
)

var currentConnections = regexp.MustCompile(`(?m)^current-connections: (\d+)$`)

// A connection that closed is counted out before the next command is
// answered, as beanstalkd does (pheanstalk's ConnectionTest::testDisconnect
// failed on gmq 1 run in 4: a stats sent right after another connection
// closed still counted it). Each round opens a connection, has it run a
// command (so the broker has taken it in), closes it and asks another
// connection's stats at once: the count is exact every time, with no wait.
func TestClosedConnectionCountedOutAtOnce(t *testing.T) {
	b := broker(t)
	stats := dial(t, b.BeanstalkAddr)
	for round := range 200 {
		other := dial(t, b.BeanstalkAddr)
		other.must("use counted\r\n", "USING counted\r\n")
		if got := count(t, stats); got != "2" {
			t.Fatalf("round %d, both open: current-connections %s, want 2", round, got)
		}
		other.nc.Close()
		if got := count(t, stats); got != "1" {
			t.Fatalf("round %d, right after a close: current-connections %s, want 1", round, got)
		}
	}
}

func count(t *testing.T, w *wire) string {
	t.Helper()
	m := currentConnections.FindStringSubmatch(w.do("stats\r\n"))
	if m == nil {
		t.Fatal("stats without current-connections")
	}
	return m[1]
}
