// Package redistest starts real redis-server processes for tests: each on a
// free 127.0.0.1 port, in its own temporary directory, with AOF on so that a
// restart keeps the data, as production does.
package redistest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Server is one redis-server process owned by a test.
type Server struct {
	Addr    string
	TLSAddr string // where it listens with TLS too (StartTLS), else ""
	dir     string
	extra   []string // more redis-server arguments (a cluster node's)
	// sentinelConf, when set, makes the process a Redis Sentinel with that
	// configuration file (which it rewrites).
	sentinelConf string
	cmd          *exec.Cmd
	done         chan struct{}
}

// Start launches a redis-server and stops it when the test ends. It fails the
// test with the install command when redis-server is not on the PATH.
func Start(tb testing.TB) *Server {
	tb.Helper()
	s, err := StartIn(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Stop)
	return s
}

// StartIn launches a redis-server with its data in dir; the caller must Stop it.
// TestMain functions use it, since they have no testing.TB.
func StartIn(dir string) (*Server, error) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		return nil, fmt.Errorf("redis-server not found (install it: apt-get install -y redis-server): %w", err)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s := &Server{Addr: fmt.Sprintf("127.0.0.1:%d", port), dir: dir}
	return s, s.launch()
}

// URL is the redis:// address of the server.
func (s *Server) URL() string { return "redis://" + s.Addr }

// PID is the redis-server process's id (its CPU time is read by benchmarks).
func (s *Server) PID() int { return s.cmd.Process.Pid }

func (s *Server) launch() error {
	_, port, _ := net.SplitHostPort(s.Addr)
	args := append([]string{"--bind", "127.0.0.1", "--port", port, "--dir", s.dir,
		"--appendonly", "yes", "--appendfsync", "everysec", "--save", "", "--daemonize", "no",
		"--logfile", filepath.Join(s.dir, "redis.log"),
		"--repl-diskless-sync-delay", "0"}, s.extra...) // a replica syncs at once, not after 5 s
	if s.sentinelConf != "" {
		args = []string{s.sentinelConf, "--sentinel"}
	}
	s.cmd = exec.Command("redis-server", args...)
	// A test binary that dies (a panic, a timeout) must not leave its Redis behind.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	s.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) {
		_ = cmd.Wait() // exit status of a killed test server is expected and uninteresting
		close(done)
	}(s.cmd, s.done)
	return s.waitReady(10 * time.Second)
}

func (s *Server) waitReady(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if reply, err := s.Do("PING"); err == nil && reply == "+PONG" {
			return nil
		}
		select {
		case <-s.done:
			log, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
			return fmt.Errorf("redis-server exited at start: %s", log)
		case <-time.After(20 * time.Millisecond):
		}
	}
	return fmt.Errorf("redis-server on %s not ready after %v", s.Addr, limit)
}

// Do sends one inline command and returns the first line of the reply; enough
// for FLUSHALL, PING, SHUTDOWN and counting clients in tests.
func (s *Server) Do(args ...string) (string, error) {
	conn, err := net.DialTimeout("tcp", s.Addr, time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := conn.Write([]byte(b.String())); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	return strings.TrimRight(line, "\r\n"), err
}

// Flush empties the server between test cases.
func (s *Server) Flush(tb testing.TB) {
	tb.Helper()
	if reply, err := s.Do("FLUSHALL"); err != nil || reply != "+OK" {
		tb.Fatalf("FLUSHALL: %q %v", reply, err)
	}
}

// Kill ends the server with SIGKILL, as a crash would.
func (s *Server) Kill() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Kill() // already gone is fine
		<-s.done
	}
}

// Terminate stops the server as an operator would (SIGTERM): Redis writes its
// AOF out before it exits.
func (s *Server) Terminate() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(syscall.SIGTERM) // already gone is fine
		<-s.done
	}
}

// Stall freezes the server for d with SIGSTOP, as a stuck disk or a VM pause
// would, then lets it go on with SIGCONT. Its clients' connections stay open
// and their commands queue up meanwhile.
func (s *Server) Stall(d time.Duration) error {
	resumed, err := s.Pause(d)
	if err != nil {
		return err
	}
	return resumed()
}

// Pause is Stall that returns once the server is stopped (its state in
// /proc is T), so the caller can act while it is frozen; resumed waits
// until it runs again.
func (s *Server) Pause(d time.Duration) (resumed func() error, err error) {
	thaw, err := s.Freeze()
	if err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { // owned by the caller of resumed; ends after d whatever happens
		time.Sleep(d)
		done <- thaw()
	}()
	return func() error { return <-done }, nil
}

// Freeze stops the server with SIGSTOP and returns once it is stopped (its
// state in /proc is T); it stays frozen until thaw (SIGCONT). A test that
// checks what happens while Redis is frozen uses it rather than Pause, so a
// slow machine cannot thaw Redis before the checks are done.
func (s *Server) Freeze() (thaw func() error, err error) {
	pid := s.cmd.Process.Pid
	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return nil, fmt.Errorf("stall redis-server: %w", err)
	}
	for range 1000 {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if _, rest, ok := strings.Cut(string(stat), ") "); err != nil || !ok || strings.HasPrefix(rest, "T") {
			break // stopped (or /proc unreadable: take the signal as landed)
		}
		time.Sleep(time.Millisecond)
	}
	return func() error {
		if err := s.cmd.Process.Signal(syscall.SIGCONT); err != nil {
			return fmt.Errorf("resume redis-server: %w", err)
		}
		return nil
	}, nil
}

// StartAgain starts a stopped server on the same port and data directory.
func (s *Server) StartAgain() error { return s.launch() }

// Restart starts the server again on the same port and data directory.
func (s *Server) Restart() error {
	s.Kill()
	return s.launch()
}

// RestartEmpty kills the server, deletes its data (the AOF and any RDB
// file), and starts it again on the same port: a Redis that lost its data,
// as one restarted without persistence or a failover to an empty replica.
func (s *Server) RestartEmpty() error {
	s.Kill()
	for _, name := range []string{"appendonlydir", "appendonly.aof", "dump.rdb"} {
		if err := os.RemoveAll(filepath.Join(s.dir, name)); err != nil {
			return fmt.Errorf("remove redis data: %w", err)
		}
	}
	return s.launch()
}

// Stop ends the server.
func (s *Server) Stop() { s.Kill() }

// ConnectedClients reports how many client connections the server holds.
func (s *Server) ConnectedClients() (int, error) {
	conn, err := net.DialTimeout("tcp", s.Addr, time.Second)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("INFO clients\r\n")); err != nil {
		return 0, err
	}
	r := bufio.NewReader(conn)
	if err := conn.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return 0, err
	}
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return 0, err
		}
		var n int
		if _, err := fmt.Sscanf(line, "connected_clients:%d", &n); err == nil {
			return n - 1, nil // not counting this connection
		}
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Context returns a context that ends with the test.
func Context(tb testing.TB) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	return ctx
}

// Main runs a test package with one redis-server for all its tests: it starts
// the server, hands it to setUp (which may do more set-up and fail), runs the
// tests and exits with their status. Call it from TestMain.
func Main(m *testing.M, setUp func(*Server) error) {
	os.Exit(runMain(m, setUp))
}

func runMain(m *testing.M, setUp func(*Server) error) int {
	dir, err := os.MkdirTemp("", "gmq-redis")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	s, err := StartIn(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer s.Stop()
	if err := setUp(s); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}
