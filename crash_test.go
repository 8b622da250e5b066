package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/internal/redistest"
	"github.com/gmq/gmq/pool"
)

// These tests run the real gmq binary and kill it with SIGKILL, as a crash
// would, then check that no job was lost and every job is in exactly one state.

var binary string

func TestMain(m *testing.M) {
	// This test binary run again by a test of the harness (runInner) uses
	// the broker its parent built.
	if bin := os.Getenv("GMQ_TEST_BINARY"); bin != "" {
		binary = bin
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "gmq-crash-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "gmq")
	if out, err := exec.Command("go", "build", "-race", "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build gmq: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// brokerProc is a gmq process on a fixed address, restartable after a kill.
type brokerProc struct {
	t         *testing.T
	addr      string
	beanstalk string
	rpc       string
	kestrel   string
	text      string // kestrel's text protocol (this tree's binaries only)
	thrift    string // kestrel's thrift protocol (this tree's binaries only)
	redis     string
	fileLimit int    // when > 0, the broker runs under ulimit -n fileLimit
	bin       string // the gmq binary to run; "" for the race-detecting one
	conf      string
	cmd       *exec.Cmd
	done      chan struct{}
	log       *syncLog
	mu        sync.Mutex
	// serving says the process now running got ready; stopping that the
	// harness (or the test) ended it. A ready process that dies otherwise
	// fails the test at once, with its log (watch).
	serving, stopping atomic.Bool
}

func startBroker(t *testing.T, redisURL string) *brokerProc {
	t.Helper()
	return startBrokerOf(t, redisURL, "")
}

// startBrokerOf is startBroker with bin as the broker's binary ("": this
// build's).
func startBrokerOf(t *testing.T, redisURL, bin string) *brokerProc {
	t.Helper()
	return startBrokerWith(t, redisURL, bin, "")
}

// startBrokerWith is startBrokerOf with more of conf.ini: extra follows
// the [redis] and [bucket] sections every test broker has.
func startBrokerWith(t *testing.T, redisURL, bin, extra string) *brokerProc {
	t.Helper()
	addr := freeAddr(t)
	conf := filepath.Join(t.TempDir(), "conf.ini")
	if err := os.WriteFile(conf, []byte("[redis]\nbuckets = 4\n[bucket]\nmax_sleep = 200ms\n"+extra), 0o644); err != nil {
		t.Fatal(err)
	}
	b := &brokerProc{t: t, addr: addr, redis: redisURL, conf: conf, bin: bin}
	t.Cleanup(b.kill)
	// No test takes a port freeAddr claimed, but a program outside them may
	// bind one before the broker does: then other ports.
	for try := 1; ; try++ {
		b.beanstalk, b.rpc, b.kestrel, b.text, b.thrift = freeAddr(t), freeAddr(t), freeAddr(t), freeAddr(t), freeAddr(t)
		b.log = &syncLog{}
		if !b.startOrTaken() {
			return b
		}
		if try == 5 {
			t.Fatalf("broker did not start: its ports were taken 5 times:\n%s", b.log)
		}
		b.addr = freeAddr(t)
	}
}

// restartWith kills the broker and starts it again with conf as its
// conf.ini (and bin, when not empty, as its binary).
func (b *brokerProc) restartWith(bin, conf string) {
	b.t.Helper()
	b.kill()
	if bin != "" {
		b.bin = bin
	}
	if err := os.WriteFile(b.conf, []byte(conf), 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.start()
}

// start starts the broker again on its own ports (after a kill) and waits
// until it is ready; a broker that does not get ready (its port taken
// meanwhile, or any other way) fails the test at once, with its log.
func (b *brokerProc) start() {
	b.t.Helper()
	if b.startOrTaken() {
		b.t.Fatalf("broker did not start again on its ports (%s): one was taken while it was down; its log:\n%s",
			strings.Join(b.listens(), " "), b.log)
	}
}

// listens is every address the broker listens on.
func (b *brokerProc) listens() []string {
	addrs := []string{b.addr, b.beanstalk, b.rpc, b.kestrel}
	if b.newBinary() {
		addrs = append(addrs, b.text, b.thrift)
	}
	return addrs
}

// newBinary says the broker runs a build of this tree; an older commit's
// (buildAt) has neither of kestrel's text and thrift protocols.
func (b *brokerProc) newBinary() bool {
	return b.bin == "" || filepath.Dir(b.bin) == filepath.Dir(binary)
}

// startOrTaken starts the broker and waits until it is ready; it says
// true, the broker gone, when a port of its was taken meanwhile.
//
// Ready is /readyz answering 200 and the process started here holding a
// listening socket on each of its ports: an answer on the HTTP port alone
// may come from another process that took the port while the broker was
// down (the broker then exits, "address already in use"). The broker opens
// all its listeners before it serves any, so once they are its own, so is
// the answer.
func (b *brokerProc) startOrTaken() bool {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	args := []string{"start", "-c", b.conf, "--http", b.addr, "--beanstalk", b.beanstalk, "--rpc", b.rpc, "--kestrel", b.kestrel, "--redis", b.redis}
	bin := b.bin
	if bin == "" {
		bin = binary
	}
	if b.newBinary() {
		args = append(args, "--text", b.text, "--thrift", b.thrift)
	}
	b.cmd = exec.Command(bin, args...)
	if b.fileLimit > 0 { // sh execs the broker: same process, same pid
		b.cmd = exec.Command("sh", append([]string{"-c", fmt.Sprintf(`ulimit -n %d && exec "$0" "$@"`, b.fileLimit), bin}, args...)...)
	}
	b.cmd.Stdout, b.cmd.Stderr = b.log, b.log
	b.serving.Store(false)
	b.stopping.Store(false)
	since := len(b.log.String())
	if err := b.cmd.Start(); err != nil {
		b.t.Fatal(err)
	}
	b.done = make(chan struct{})
	go b.watch(b.cmd, b.done, since)
	// A deadline only for a broker that never gets ready: a race-detecting
	// build on a loaded machine may take seconds.
	deadline := time.Now().Add(60 * time.Second)
	stranger := ""
	for time.Now().Before(deadline) {
		if resp, err := http.Get(b.url("/readyz")); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				missing, err := notListening(b.cmd.Process.Pid, b.listens())
				switch {
				case err != nil && !endsWithin(b.done, 10*time.Second): // its files gone, it ends (a zombie's go first)
					b.t.Fatalf("is the broker on %s the one started? %v", b.addr, err)
				case err == nil && len(missing) == 0:
					b.serving.Store(true)
					return false
				}
				// Another process answered; or the broker exited (its
				// port taken) and took its open files with it, which
				// failed TestRestartOnATakenPortIsCaught once: b.done says.
				stranger = fmt.Sprintf(" (meanwhile another process answered /readyz on %s)", b.addr)
			}
		}
		select {
		case <-b.done: // it exited before it was ready: no use waiting
			if strings.Contains(b.log.String()[since:], "address already in use") {
				return true
			}
			b.t.Fatalf("broker exited before it was ready%s:\n%s", stranger, b.log)
		case <-time.After(20 * time.Millisecond):
		}
	}
	b.t.Fatalf("broker did not get ready in 60 s%s:\n%s", stranger, b.log)
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
func (b *brokerProc) watch(cmd *exec.Cmd, done chan struct{}, since int) {
	defer close(done)
	err := cmd.Wait() // a killed broker's exit status is the point of the test
	if err != nil && b.serving.Load() && !b.stopping.Load() {
		b.t.Errorf("the broker on %s (pid %d) died while its test ran: %v; its log since it started:\n%s",
			b.addr, cmd.Process.Pid, err, b.log.String()[since:])
	}
}

// waitUntil polls until ok holds. Its deadline is only for what never
// happens, far past what a loaded machine takes: a test waits for a
// condition, not for a time a slow machine can overtake.
func waitUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !ok(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not so after a minute", what)
		}
	}
}

// syncLog collects a broker's output: exec writes it from its own goroutine
// while the test reads it.
type syncLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// kill ends the broker with SIGKILL and waits for it to be gone.
func (b *brokerProc) kill() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cmd != nil && b.cmd.Process != nil {
		b.stopping.Store(true)
		_ = b.cmd.Process.Kill() // already exited is fine
		<-b.done
	}
}

// exitsCleanly waits up to limit for the broker to exit after why (a
// SIGTERM, a shutdown command), and fails t unless it exits 0.
func (b *brokerProc) exitsCleanly(t *testing.T, limit time.Duration, why string) {
	t.Helper()
	select {
	case <-b.done:
	case <-time.After(limit):
		t.Fatalf("broker still running %v after %s", limit, why)
	}
	if code := b.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit code %d after %s, want 0\n%s", code, why, b.log)
	}
}

func (b *brokerProc) url(path string) string { return "http://" + b.addr + path }

type answer struct {
	code int
	body map[string]any
}

func (b *brokerProc) do(method, path, body string) (answer, error) {
	return b.doContext(context.Background(), method, path, body)
}

// doContext is do, given up when ctx ends.
func (b *brokerProc) doContext(ctx context.Context, method, path, body string) (answer, error) {
	req, err := http.NewRequestWithContext(ctx, method, b.url(path), strings.NewReader(body))
	if err != nil {
		return answer{}, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, err
	}
	a := answer{code: resp.StatusCode}
	if len(data) > 0 {
		if err := json.Unmarshal(data, &a.body); err != nil {
			return a, fmt.Errorf("%s %s: not JSON: %q", method, path, data)
		}
	}
	return a, nil
}

func (b *brokerProc) must(want int, method, path, body string) map[string]any {
	b.t.Helper()
	a, err := b.do(method, path, body)
	if err != nil || a.code != want {
		b.t.Fatalf("%s %s %s: %d %v %v, want %d", method, path, body, a.code, a.body, err, want)
	}
	return a.body
}

// totalsWritten waits until the store holds the totals broker b counted,
// which it writes within a second (pool/totals.go): a kill after it loses
// none of them.
func totalsWritten(t *testing.T, b *brokerProc, store *pool.Pool) {
	t.Helper()
	waitUntil(t, "the broker's counted totals written", func() bool {
		own := b.must(200, "GET", "/api/v1/stats", ``)
		st, err := store.Stats(context.Background())
		return err == nil && own["total_jobs"] == float64(st.Jobs) && own["total_reserves"] == float64(st.Reserves) &&
			own["total_deletes"] == float64(st.Deletes)
	})
}

// checker reads the store directly to verify it.
func checker(t *testing.T, redisURL string) *pool.Pool {
	t.Helper()
	client, err := pool.Dial(context.Background(), redisURL, 5*time.Second, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	return pool.New(client, brokertest.PoolOptions(4, "checker"))
}

func mustBeConsistent(t *testing.T, p *pool.Pool, when string) {
	t.Helper()
	problems, err := p.Check(context.Background())
	if err != nil || len(problems) > 0 {
		t.Fatalf("%s: store check: %v %v", when, problems, err)
	}
}

// The broker is killed after every request and started again; each request
// goes to a fresh process. Delayed jobs and expired reservations are picked
// up by the restarted broker with no manual step.
//
// No step's answer depends on how long a restart takes: c has a topic of its
// own, so neither b coming due nor a's TTR running out early can take c's
// place; a's second delivery is acked in the step that takes it (its TTR,
// one second, is then the margin for three requests, not for restarts).
func TestCrashBetweenRequests(t *testing.T) {
	srv := redistest.Start(t)
	b := startBroker(t, srv.URL())
	store := checker(t, srv.URL())
	steps := []struct {
		name string
		run  func()
	}{
		{"push a ready job with a short TTR", func() { b.must(201, "POST", "/api/v1/jobs", `{"id":"a","topic":"t","body":"A","TTR":1}`) }},
		{"push a delayed job", func() { b.must(201, "POST", "/api/v1/jobs", `{"id":"b","topic":"t","body":"B","delay":0.5}`) }},
		{"push a third, on a topic of its own", func() { b.must(201, "POST", "/api/v1/jobs", `{"id":"c","topic":"u","body":"C"}`) }},
		{"reserve a", func() {
			if j := b.must(200, "GET", "/api/v1/pop?topic=t", ``); j["id"] != "a" {
				t.Fatalf("popped %v, want a", j)
			}
		}},
		{"reserve c", func() {
			if j := b.must(200, "GET", "/api/v1/pop?topic=u", ``); j["id"] != "c" {
				t.Fatalf("popped %v, want c", j)
			}
		}},
		{"bury c", func() { b.must(200, "POST", "/api/v1/jobs/c/bury", `{"attempt":1}`) }},
		{"kick c", func() { b.must(200, "POST", "/api/v1/jobs/c/kick", ``) }},
		{"a's TTR runs out and b comes due while no request is made", func() {
			// A deadline only for a broker that never moves them: a
			// loaded machine's restarts may take seconds.
			deadline := time.Now().Add(60 * time.Second)
			for {
				a := b.must(200, "GET", "/api/v1/jobs/a", ``)
				bj := b.must(200, "GET", "/api/v1/jobs/b", ``)
				if a["state"] == "ready" && a["timeouts"] == 1.0 && bj["state"] == "ready" {
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("a %v, b %v: the restarted broker did not move them", a, bj)
				}
				time.Sleep(50 * time.Millisecond)
			}
		}},
		{"reserve a again, refuse the first delivery's ack, ack the second", func() {
			// a comes before b: same priority, pushed first.
			if j := b.must(200, "POST", "/api/v1/pop", `{"topics":["t"]}`); j["id"] != "a" || j["attempt"] != 2.0 {
				t.Fatalf("popped %v, want a on attempt 2", j)
			}
			b.must(409, "POST", "/api/v1/jobs/a/ack", `{"attempt":1}`)
			b.must(200, "POST", "/api/v1/jobs/a/ack", `{"attempt":2}`)
		}},
		{"delete b", func() { b.must(200, "DELETE", "/api/v1/jobs/b", ``) }},
		{"reserve and ack c", func() {
			j := b.must(200, "GET", "/api/v1/pop?topic=u", ``)
			b.must(200, "POST", fmt.Sprintf("/api/v1/jobs/c/ack?attempt=%v", j["attempt"]), ``)
		}},
	}
	for _, s := range steps {
		s.run()
		totalsWritten(t, b, store) // the totals it counted: a kill before they are written loses them (pool/totals.go)
		b.kill()
		mustBeConsistent(t, store, "after "+s.name)
		b.start()
	}
	stats := b.must(200, "GET", "/api/v1/stats", ``)
	for _, k := range []string{"current_jobs_ready", "current_jobs_delayed", "current_jobs_reserved", "current_jobs_buried"} {
		if stats[k] != 0.0 {
			t.Fatalf("%s = %v at the end, want 0", k, stats[k])
		}
	}
	if stats["total_jobs"] != 3.0 || stats["total_deletes"] != 3.0 || stats["total_timeouts"] != 1.0 {
		t.Fatalf("stats %v", stats)
	}
}

// A kestrel reliable read survives a SIGKILL of the broker that holds it:
// nobody touches it any more, its TTR runs out and the item comes back.
func TestKestrelOpenReadSurvivesSIGKILL(t *testing.T) {
	srv := redistest.Start(t)
	b := startBroker(t, srv.URL())
	store := checker(t, srv.URL())
	b.restartWith("", "[redis]\nbuckets = 4\n[bucket]\nmax_sleep = 200ms\n[jobs]\ndefault_ttr = 1s\n")
	c, err := net.DialTimeout("tcp", b.kestrel, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, "set k 0 0 4\r\nitem\r\nget k/open\r\n"); err != nil {
		t.Fatal(err)
	}
	want := "STORED\r\nVALUE k/open 0 4\r\nitem\r\nEND\r\n"
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c, got); err != nil || string(got) != want {
		t.Fatalf("set and open: %q %v", got, err)
	}
	b.kill()
	mustBeConsistent(t, store, "killed with a read open")
	b.start()
	if line, err := exchange(b.kestrel, "get k/t=5000\r\n"); err != nil || line != "VALUE k/t=5000 0 4\r\n" {
		t.Fatalf("after the restart: %q %v, want the item back", line, err)
	}
	mustBeConsistent(t, store, "after the item came back")
}
