// Package harness runs gmq as the system tests do: the binary built from
// this module (Main), brokers started as processes on ports claimed for
// their test, killed and started again (BrokerProc), older commits' brokers
// beside them (BuildAt), and the load's helpers shared by several test
// packages (InTurn, Consume, Ending). Its own tests check the harness.
package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/pool"
)

// Binary is the race-detecting gmq built by Main for this test process.
var Binary string

// Main is a system-test package's TestMain: it builds gmq (with the race
// detector) from the module's root into a temporary folder, runs the
// tests, and removes the folder.
func Main(m *testing.M) {
	// This test binary run again by a test of the harness (runInner) uses
	// the broker its parent built.
	if bin := os.Getenv("GMQ_TEST_BINARY"); bin != "" {
		Binary = bin
		os.Exit(m.Run())
	}
	root, err := Root()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	dir, err := os.MkdirTemp("", "gmq-crash-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	Binary = filepath.Join(dir, "gmq")
	build := exec.Command("go", "build", "-race", "-o", Binary, ".")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build gmq: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Root is the module's root folder (where go.mod is), from any folder of
// it: where gmq is built, and what the tests of the repository's own files
// (conf.ini, scripts/, docs/) read them relative to.
var Root = sync.OnceValues(func() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("the module's root (go env GOMOD): %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("the module's root: go env GOMOD says no go.mod (%q)", gomod)
	}
	return filepath.Dir(gomod), nil
})

// MustRoot is Root, failing t when it is not found.
func MustRoot(t testing.TB) string {
	t.Helper()
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// BrokerProc is a gmq process on a fixed address, restartable after a kill.
type BrokerProc struct {
	t         *testing.T
	Addr      string
	Beanstalk string
	RPC       string
	Kestrel   string
	Text      string // kestrel's text protocol (this tree's binaries only)
	Thrift    string // kestrel's thrift protocol (this tree's binaries only)
	Redis     string
	FileLimit int    // when > 0, the broker runs under ulimit -n fileLimit
	Bin       string // the gmq binary to run; "" for the race-detecting one
	Conf      string
	Cmd       *exec.Cmd
	Done      chan struct{}
	Log       *SyncLog
	mu        sync.Mutex
	// serving says the process now running got ready; stopping that the
	// harness (or the test) ended it. A ready process that dies otherwise
	// fails the test at once, with its log (watch).
	serving, stopping atomic.Bool
}

func StartBroker(t *testing.T, redisURL string) *BrokerProc {
	t.Helper()
	return StartBrokerOf(t, redisURL, "")
}

// StartBrokerOf is StartBroker with bin as the broker's binary ("": this
// build's).
func StartBrokerOf(t *testing.T, redisURL, bin string) *BrokerProc {
	t.Helper()
	return StartBrokerWith(t, redisURL, bin, "")
}

// StartBrokerWith is StartBrokerOf with more of conf.ini: extra follows
// the [redis] and [bucket] sections every test broker has.
func StartBrokerWith(t *testing.T, redisURL, bin, extra string) *BrokerProc {
	t.Helper()
	addr := FreeAddr(t)
	conf := filepath.Join(t.TempDir(), "conf.ini")
	if err := os.WriteFile(conf, []byte("[redis]\nbuckets = 4\n[bucket]\nmax_sleep = 200ms\n"+extra), 0o644); err != nil {
		t.Fatal(err)
	}
	b := &BrokerProc{t: t, Addr: addr, Redis: redisURL, Conf: conf, Bin: bin}
	t.Cleanup(b.Kill)
	// No test takes a port FreeAddr claimed, but a program outside them may
	// bind one before the broker does: then other ports.
	for try := 1; ; try++ {
		b.Beanstalk, b.RPC, b.Kestrel, b.Text, b.Thrift = FreeAddr(t), FreeAddr(t), FreeAddr(t), FreeAddr(t), FreeAddr(t)
		b.Log = &SyncLog{}
		if !b.StartOrTaken() {
			return b
		}
		if try == 5 {
			t.Fatalf("broker did not start: its ports were taken 5 times:\n%s", b.Log)
		}
		b.Addr = FreeAddr(t)
	}
}

// RestartWith kills the broker and starts it again with conf as its
// conf.ini (and bin, when not empty, as its binary).
func (b *BrokerProc) RestartWith(bin, conf string) {
	b.t.Helper()
	b.Kill()
	if bin != "" {
		b.Bin = bin
	}
	if err := os.WriteFile(b.Conf, []byte(conf), 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.Start()
}

// Start starts the broker again on its own ports (after a kill) and waits
// until it is ready; a broker that does not get ready (its port taken
// meanwhile, or any other way) fails the test at once, with its log.
func (b *BrokerProc) Start() {
	b.t.Helper()
	if b.StartOrTaken() {
		b.t.Fatalf("broker did not start again on its ports (%s): one was taken while it was down; its log:\n%s",
			strings.Join(b.Listens(), " "), b.Log)
	}
}

// Listens is every address the broker listens on.
func (b *BrokerProc) Listens() []string {
	addrs := []string{b.Addr, b.Beanstalk, b.RPC, b.Kestrel}
	if b.NewBinary() {
		addrs = append(addrs, b.Text, b.Thrift)
	}
	return addrs
}

// NewBinary says the broker runs a build of this tree; an older commit's
// (BuildAt) has neither of kestrel's text and thrift protocols.
func (b *BrokerProc) NewBinary() bool {
	return b.Bin == "" || filepath.Dir(b.Bin) == filepath.Dir(Binary)
}

// StartOrTaken starts the broker and waits until it is ready; it says
// true, the broker gone, when a port of its was taken meanwhile.
//
// Ready is /readyz answering 200 and the process started here holding a
// listening socket on each of its ports: an answer on the HTTP port alone
// may come from another process that took the port while the broker was
// down (the broker then exits, "address already in use"). The broker opens
// all its listeners before it serves any, so once they are its own, so is
// the answer.
func (b *BrokerProc) StartOrTaken() bool {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	args := []string{"start", "-c", b.Conf, "--http", b.Addr, "--beanstalk", b.Beanstalk, "--rpc", b.RPC, "--kestrel", b.Kestrel, "--redis", b.Redis}
	bin := b.Bin
	if bin == "" {
		bin = Binary
	}
	if b.NewBinary() {
		args = append(args, "--text", b.Text, "--thrift", b.Thrift)
	}
	b.Cmd = exec.Command(bin, args...)
	if b.FileLimit > 0 { // sh execs the broker: same process, same pid
		b.Cmd = exec.Command("sh", append([]string{"-c", fmt.Sprintf(`ulimit -n %d && exec "$0" "$@"`, b.FileLimit), bin}, args...)...)
	}
	b.Cmd.Stdout, b.Cmd.Stderr = b.Log, b.Log
	b.serving.Store(false)
	b.stopping.Store(false)
	since := len(b.Log.String())
	if err := b.Cmd.Start(); err != nil {
		b.t.Fatal(err)
	}
	b.Done = make(chan struct{})
	go b.watch(b.Cmd, b.Done, since)
	// A deadline only for a broker that never gets ready: a race-detecting
	// build on a loaded machine may take seconds.
	deadline := time.Now().Add(60 * time.Second)
	stranger := ""
	for time.Now().Before(deadline) {
		if resp, err := http.Get(b.URL("/readyz")); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				missing, err := notListening(b.Cmd.Process.Pid, b.Listens())
				switch {
				case err != nil && !endsWithin(b.Done, 10*time.Second): // its files gone, it ends (a zombie's go first)
					b.t.Fatalf("is the broker on %s the one started? %v", b.Addr, err)
				case err == nil && len(missing) == 0:
					b.serving.Store(true)
					return false
				}
				// Another process answered; or the broker exited (its
				// port taken) and took its open files with it, which
				// failed TestRestartOnATakenPortIsCaught once: b.done says.
				stranger = fmt.Sprintf(" (meanwhile another process answered /readyz on %s)", b.Addr)
			}
		}
		select {
		case <-b.Done: // it exited before it was ready: no use waiting
			if strings.Contains(b.Log.String()[since:], "address already in use") {
				return true
			}
			b.t.Fatalf("broker exited before it was ready%s:\n%s", stranger, b.Log)
		case <-time.After(20 * time.Millisecond):
		}
	}
	b.t.Fatalf("broker did not get ready in 60 s%s:\n%s", stranger, b.Log)
	return false
}

// endsWithin says whether done closes within limit: a bound only for what
// never happens, a process whose open files cannot be read yet runs on.
func endsWithin(done <-chan struct{}, limit time.Duration) bool {
	select {
	case <-done:
		return true
	case <-time.After(limit):
		return false
	}
}

// watch waits for the broker process to end, and fails the test at once,
// with the process's log, if it had got ready and neither the harness nor
// the test ended it: a chaos test must not go on (or hang) against a
// broker that died of a panic or a fatal error.
func (b *BrokerProc) watch(cmd *exec.Cmd, done chan struct{}, since int) {
	defer close(done)
	err := cmd.Wait() // a killed broker's exit status is the point of the test
	if err != nil && b.serving.Load() && !b.stopping.Load() {
		b.t.Errorf("the broker on %s (pid %d) died while its test ran: %v; its log since it started:\n%s",
			b.Addr, cmd.Process.Pid, err, b.Log.String()[since:])
	}
}

// WaitUntil polls until ok holds. Its deadline is only for what never
// happens, far past what a loaded machine takes: a test waits for a
// condition, not for a time a slow machine can overtake.
func WaitUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !ok(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not so after a minute", what)
		}
	}
}

// SyncLog collects a broker's output: exec writes it from its own goroutine
// while the test reads it.
type SyncLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *SyncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *SyncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Kill ends the broker with SIGKILL and waits for it to be gone.
func (b *BrokerProc) Kill() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.Cmd != nil && b.Cmd.Process != nil {
		b.stopping.Store(true)
		_ = b.Cmd.Process.Kill() // already exited is fine
		<-b.Done
	}
}

// ExitsCleanly waits up to limit for the broker to exit after why (a
// SIGTERM, a shutdown command), and fails t unless it exits 0.
func (b *BrokerProc) ExitsCleanly(t *testing.T, limit time.Duration, why string) {
	t.Helper()
	select {
	case <-b.Done:
	case <-time.After(limit):
		t.Fatalf("broker still running %v after %s", limit, why)
	}
	if code := b.Cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit code %d after %s, want 0\n%s", code, why, b.Log)
	}
}

func (b *BrokerProc) URL(path string) string { return "http://" + b.Addr + path }

type Answer struct {
	Code int
	Body map[string]any
}

func (b *BrokerProc) Do(method, path, body string) (Answer, error) {
	return b.DoContext(context.Background(), method, path, body)
}

// DoContext is do, given up when ctx ends.
func (b *BrokerProc) DoContext(ctx context.Context, method, path, body string) (Answer, error) {
	req, err := http.NewRequestWithContext(ctx, method, b.URL(path), strings.NewReader(body))
	if err != nil {
		return Answer{}, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return Answer{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return Answer{}, err
	}
	a := Answer{Code: resp.StatusCode}
	if len(data) > 0 {
		if err := json.Unmarshal(data, &a.Body); err != nil {
			return a, fmt.Errorf("%s %s: not JSON: %q", method, path, data)
		}
	}
	return a, nil
}

func (b *BrokerProc) Must(want int, method, path, body string) map[string]any {
	b.t.Helper()
	a, err := b.Do(method, path, body)
	if err != nil || a.Code != want {
		b.t.Fatalf("%s %s %s: %d %v %v, want %d", method, path, body, a.Code, a.Body, err, want)
	}
	return a.Body
}

func (b *BrokerProc) Ready() int {
	a, err := b.Do("GET", "/readyz", "")
	if err != nil {
		return 0
	}
	return a.Code
}

func (b *BrokerProc) PushCode(topic string) int {
	a, err := b.Do("POST", "/api/v1/jobs", `{"topic":"`+topic+`","body":"x"}`)
	if err != nil {
		return 0
	}
	return a.Code
}

// MemcacheStatus is kestrel's memcache status line on the broker's port.
func (b *BrokerProc) MemcacheStatus(t *testing.T) string {
	t.Helper()
	return strings.TrimSpace(brokertest.Lines(t, b.Kestrel, "status\r\n", 1)[0])
}

// Quit sends a hung broker SIGQUIT, so that its goroutines go to its log
// for the failure that follows to show.
func (b *BrokerProc) Quit() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.Cmd != nil && b.Cmd.Process != nil {
		b.stopping.Store(true) // the caller says it, with the log: watch need not say it again
		_ = b.Cmd.Process.Signal(syscall.SIGQUIT)
	}
}

// TotalsWritten waits until the store holds the totals broker b counted,
// which it writes within a second (pool/totals.go): a kill after it loses
// none of them.
func TotalsWritten(t *testing.T, b *BrokerProc, store *pool.Pool) {
	t.Helper()
	WaitUntil(t, "the broker's counted totals written", func() bool {
		own := b.Must(200, "GET", "/api/v1/stats", ``)
		st, err := store.Stats(context.Background())
		return err == nil && own["total_jobs"] == float64(st.Jobs) && own["total_reserves"] == float64(st.Reserves) &&
			own["total_deletes"] == float64(st.Deletes)
	})
}

// Checker reads the store directly to verify it.
func Checker(t *testing.T, redisURL string) *pool.Pool {
	t.Helper()
	client, err := pool.Dial(context.Background(), redisURL, 5*time.Second, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	return pool.New(client, brokertest.PoolOptions(4, "checker"))
}

func MustBeConsistent(t *testing.T, p *pool.Pool, when string) {
	t.Helper()
	problems, err := p.Check(context.Background())
	if err != nil || len(problems) > 0 {
		t.Fatalf("%s: store check: %v %v", when, problems, err)
	}
}
