// Package python_test runs the Python client (this folder) against a live
// broker: its scripts in testdata/ and its examples, with Debian's python3.
package python_test

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
)

func TestMain(m *testing.M) { brokertest.Main(m) }

func python(t *testing.T) string { return brokertest.Tool(t, "python3", "GMQ_REQUIRE_PYTHON") }

// run runs a script of testdata/ that prints "ok" when all went well.
func run(t *testing.T, args ...string) {
	t.Helper()
	out, err := exec.Command(python(t), args...).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("%v\n%s", err, out)
	}
}

// Every waiting call (pop, batch pop, ack then pop, batch ack then pop)
// waits its whole timeout and comes back empty, against a broker whose
// request_timeout is a third of the wait (issue 20: every long poll of
// request_timeout or more answered 503).
func TestLongPollPastRequestTimeout(t *testing.T) {
	const requestTimeout, wait = 400 * time.Millisecond, 1200 * time.Millisecond
	b := brokertest.Fresh(t, func(c *config.Config) { c.RequestTimeout = requestTimeout })
	run(t, "testdata/longpoll.py", b.URL, "py", ".", strconv.FormatFloat(wait.Seconds(), 'f', -1, 64))
}

// Batch pop and batch ack.
func TestBatches(t *testing.T) {
	b := brokertest.Fresh(t, nil)
	run(t, "testdata/batch.py", b.URL, "batch-py", ".")
}

// The producer and consumer examples run as the README shows them.
func TestExamples(t *testing.T) {
	b := brokertest.Fresh(t, nil)
	py := python(t)
	out, err := exec.Command(py, "producer.py", "--url", b.URL, "--topic", "py-ex", "-n", "6").CombinedOutput()
	if err != nil || strings.Count(string(out), "pushed ") != 6 {
		t.Fatalf("producer: %v\n%s", err, out)
	}
	out, err = exec.Command(py, "consumer.py", "--url", b.URL, "--topic", "py-ex", "-n", "6", "--idle", "2").CombinedOutput()
	if err != nil || strings.Count(string(out), "done ") != 6 {
		t.Fatalf("consumer: %v\n%s", err, out)
	}
}
