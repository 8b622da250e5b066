package harness

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gmq/gmq/internal/redistest"
)

// Tests of the test harness itself: the brokers the other tests start as
// processes, kill and start again.

func TestMain(m *testing.M) { Main(m) }

// A broker started again while another process listens on its HTTP port
// and answers /readyz there is caught: the restart says its port was
// taken, and the broker's log says why. Before, the stranger's 200 was
// taken for the broker's own, and the test went on against a broker that
// had exited ("address already in use"): make test hung so (issue 49).
func TestRestartOnATakenPortIsCaught(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	b := StartBroker(t, srv.URL())
	b.Kill()
	ln, err := net.Listen("tcp", b.Addr)
	if err != nil {
		t.Fatalf("take the killed broker's port: %v", err)
	}
	stranger := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"status":"ready"}`)
	})}
	go func() { _ = stranger.Serve(ln) }() // ends with Close
	defer stranger.Close()
	if !b.StartOrTaken() {
		t.Fatalf("the restart was taken for ready on another process's /readyz; its log:\n%s", b.Log)
	}
	if !strings.Contains(b.Log.String(), "address already in use") {
		t.Fatalf("the broker's log does not say its port was taken:\n%s", b.Log)
	}
}

// A port FreeAddr gave a test stays that test's while it runs, even while
// nothing listens on it (its broker killed): no other claim gets it, from
// this process or another (flock(1) stands in for another test binary), and
// it is free for others once the test ends. Before, FreeAddr only checked
// that the port could be bound then, so another test could be given a
// killed broker's port before its restart bound it again.
func TestPortsStayClaimed(t *testing.T) {
	t.Parallel()
	var port int
	t.Run("holder", func(t *testing.T) {
		addr := FreeAddr(t)
		_, p, _ := net.SplitHostPort(addr)
		port, _ = strconv.Atoi(p)
		if lo, hi := portRange(); port < lo || port >= hi {
			t.Fatalf("port %d outside [%d, %d)", port, lo, hi)
		}
		if claim, err := claimPort(port); !errors.Is(err, errClaimed) {
			claim.Close()
			t.Fatalf("port %d claimed again in its test's process: %v", port, err)
		}
		flock := exec.Command("flock", "--nonblock", filepath.Join(portClaims, p), "true")
		if err := flock.Run(); err == nil {
			t.Fatalf("another process claimed port %d while its test held it", port)
		} else if exit := (*exec.ExitError)(nil); !errors.As(err, &exit) {
			t.Skipf("flock(1): %v", err)
		}
	})
	claim, err := claimPort(port)
	if err != nil {
		t.Fatalf("port %d after its test ended: %v", port, err)
	}
	claim.Close()
}

// A broker that dies while its chaos test runs (a panic, here a SIGQUIT the
// harness did not send) fails the test at once with its log, and the
// test's loops stop: the consumer below, retrying each of its calls while
// the broker is down, ends as soon as the test has failed, instead of
// holding the test's deferred stop for a minute a call. Issue 49: both
// brokers of TestChaosBatchesOnCluster died of a panic, and make test hung
// for its 25 minutes in such a retry loop. The test that fails is
// TestDeadBrokerInner, run in a test binary of its own.
func TestADeadBrokerEndsItsTest(t *testing.T) {
	t.Parallel()
	out, err := runInner(t, "TestDeadBrokerInner")
	if exit := (*exec.ExitError)(nil); !errors.As(err, &exit) {
		t.Fatalf("the inner test: %v, want it failed\n%s", err, out)
	}
	if !strings.Contains(out, "died while its test ran") || !strings.Contains(out, "SIGQUIT") {
		t.Errorf("the inner test did not say its broker died, with its log:\n%s", out)
	}
	if strings.Contains(out, "gave up retrying") {
		t.Errorf("the inner test's consumer went on retrying after the test failed:\n%s", out)
	}
}

// TestDeadBrokerInner is TestADeadBrokerEndsItsTest's failing test.
func TestDeadBrokerInner(t *testing.T) {
	if os.Getenv("GMQ_TEST_INNER") != t.Name() {
		t.Skip("run by TestADeadBrokerEndsItsTest")
	}
	srv := redistest.Start(t)
	b := StartBroker(t, srv.URL())
	fleet := &InTurn{T: t, Brokers: []*BrokerProc{b}, Limit: 20 * time.Second}
	stop := Consume(t, 1, func() {
		for range 3 { // as a batch's members are looked up, each call retried while the broker is down
			fleet.Call("GET", "/api/v1/stats", ``)
		}
	})
	defer stop()
	if err := b.Cmd.Process.Signal(syscall.SIGQUIT); err != nil { // dies as a panic would
		t.Fatal(err)
	}
	<-b.Done
	b.Must(200, "GET", "/api/v1/stats", ``) // refused: Fatalf, then the deferred stop waits for the consumer
}

// runInner runs test alone in this test binary again, with the broker
// built already, and returns its output and exit.
func runInner(t *testing.T, test string) (string, error) {
	t.Helper()
	// A deadline only for an inner test that hangs: it fails in seconds.
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^"+test+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "GMQ_TEST_BINARY="+Binary, "GMQ_TEST_INNER="+test)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
