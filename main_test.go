package main

import (
	"bufio"
	"bytes"
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

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/gmq/gmq/internal/redistest"
	thriftwire "github.com/gmq/gmq/kestrel/thrift/wire"
)

// SIGTERM stops accepting, lets an in-flight long poll finish, and exits 0.
func TestSIGTERMDrains(t *testing.T) {
	srv := redistest.Start(t)
	b := startBroker(t, srv.URL())
	polled := make(chan answer, 1)
	go func() {
		a, err := b.do("GET", "/api/v1/pop?topic=idle&timeout=3", ``)
		if err != nil {
			t.Error(err)
		}
		polled <- a
	}()
	// The poll must be in flight, not on its way, when the signal comes.
	waitUntil(t, "the long poll waiting", func() bool { return b.must(200, "GET", "/api/v1/stats", ``)["current_waiting"] == 1.0 })
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if a := <-polled; a.code != 204 {
		t.Fatalf("in-flight long poll answered %d, want 204 when its time was up", a.code)
	}
	b.exitsCleanly(t, time.Minute, "SIGTERM")
	if _, err := b.do("GET", "/healthz", ``); err == nil {
		t.Fatal("still accepting after shutdown")
	}
}

func TestBadConfigNamesTheKey(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "conf.ini")
	if err := os.WriteFile(conf, []byte("[redis]\nbuckets = zero\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd := exec.Command(binary, "start", "-c", conf)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 1 {
		t.Fatalf("exit %v, want 1", err)
	}
	if !strings.Contains(out.String(), "[redis] buckets") {
		t.Fatalf("message %q does not name the key", out.String())
	}
}

func TestVersion(t *testing.T) {
	out, err := exec.Command(binary, "version").Output()
	if err != nil || !strings.HasPrefix(string(out), "gmq ") {
		t.Fatalf("%q %v", out, err)
	}
}

// SIGUSR1 puts the broker in drain mode: beanstalkd puts answer DRAINING.
func TestSIGUSR1Drains(t *testing.T) {
	srv := redistest.Start(t)
	b := startBroker(t, srv.URL())
	if err := b.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute) // only for a broker that never drains
	for {
		conn, err := net.Dial("tcp", b.beanstalk)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Write([]byte("put 1 0 1 1\r\nx\r\n")); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(conn).ReadString('\n')
		conn.Close()
		if err == nil && line == "DRAINING\r\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("put after SIGUSR1: %q %v", line, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Over [server] max_connections, a new connection is told why and closed.
func TestConnectionLimit(t *testing.T) {
	srv := redistest.Start(t)
	b := startBroker(t, srv.URL())
	if err := os.WriteFile(b.conf, []byte("[redis]\nbuckets = 4\n[server]\nmax_connections = 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b.kill()
	b.start()
	for range 3 {
		c, err := net.Dial("tcp", b.beanstalk)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	time.Sleep(100 * time.Millisecond)
	c, err := net.Dial("tcp", b.beanstalk)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetReadDeadline(time.Now().Add(3 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(c).ReadString('\n'); err != nil || line != "OUT_OF_MEMORY\r\n" {
		t.Fatalf("fourth connection: %q %v, want OUT_OF_MEMORY", line, err)
	}
	// A flood of refused connections is one log line, not one each.
	for range 20 {
		c, err := net.Dial("tcp", b.beanstalk)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
		_, _ = bufio.NewReader(c).ReadString('\n')
		c.Close()
	}
	// The broker's log reaches us through a pipe: give it a moment.
	waitForLog(t, b, "max_connections reached")
	time.Sleep(200 * time.Millisecond)
	if n := strings.Count(b.log.String(), "max_connections reached"); n != 1 {
		t.Fatalf("%d log lines for one burst of 21 refused connections, want 1:\n%s", n, b.log)
	}
}

// waitForLog waits for the broker to log text (its log comes through a pipe).
func waitForLog(t *testing.T, b *brokerProc, text string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !strings.Contains(b.log.String(), text); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the broker never logged %q:\n%s", text, b.log)
		}
	}
}

// Running out of file descriptors must not stop the broker: on every port,
// connections past the limit wait (in the kernel's backlog) until
// descriptors free up, and the broker logs a line per burst, not per
// connection. Before, the first EMFILE on the beanstalkd or JSON-RPC port
// ended the process ("accept4: too many open files").
func TestFileDescriptorExhaustion(t *testing.T) {
	srv := redistest.Start(t)
	b := startBroker(t, srv.URL())
	b.kill()
	b.fileLimit = 64
	// Caps set by hand (0, the default, would fit them to the 64 files).
	if err := os.WriteFile(b.conf, []byte("[redis]\nbuckets = 4\n[bucket]\nmax_sleep = 200ms\n[server]\nmax_connections = 20000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b.start()
	waitForLog(t, b, "max_connections") // the caps (4 x 20000) do not fit in 64 files: said at start
	var held []net.Conn
	for _, addr := range []string{b.beanstalk, b.rpc, b.kestrel, b.text, b.thrift, b.addr} {
		for range 80 {
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err != nil {
				t.Fatalf("dial %s: %v", addr, err)
			}
			held = append(held, c)
		}
	}
	waitForLog(t, b, "accept failed")
	time.Sleep(500 * time.Millisecond)
	select {
	case <-b.done:
		t.Fatalf("the broker exited when out of file descriptors:\n%s", b.log)
	default:
	}
	for _, c := range held {
		c.Close()
	}
	// Served again on every port once descriptors are free (the deadline
	// only for a broker that never serves again).
	deadline := time.Now().Add(time.Minute)
	for _, check := range []struct {
		addr string
		ask  func(addr string) (string, error)
		want string
	}{
		{b.beanstalk, sending("list-tubes\r\n"), "OK "},
		{b.rpc, sending(`{"method":"Service.Pop","params":[{"topic":"none"}],"id":1}` + "\n"), `"id":1`},
		{b.kestrel, sending("version\r\n"), "VERSION "},
		{b.text, sending("version\n"), ":"},
		{b.thrift, thriftVersion, "."},
		{b.addr, sending("GET /healthz HTTP/1.0\r\n\r\n"), "HTTP/1.0 200"},
	} {
		for {
			line, err := check.ask(check.addr)
			if err == nil && strings.Contains(line, check.want) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s after the flood: %q %v, want %q\n%s", check.addr, line, err, check.want, b.log)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if n := strings.Count(b.log.String(), "accept failed"); n > 8 {
		t.Fatalf("%d log lines about failed accepts, want one per burst and listener:\n%s", n, b.log)
	}
}

// sending is exchange of send, for any address.
func sending(send string) func(addr string) (string, error) {
	return func(addr string) (string, error) { return exchange(addr, send) }
}

// thriftVersion asks the thrift port at addr its get_version, on a new
// connection.
func thriftVersion(addr string) (string, error) {
	cfg := &thrift.TConfiguration{ConnectTimeout: time.Second, SocketTimeout: 3 * time.Second}
	trans := thrift.NewTFramedTransportConf(thrift.NewTSocketConf(addr, cfg), cfg)
	if err := trans.Open(); err != nil {
		return "", err
	}
	defer trans.Close()
	return thriftwire.NewKestrelClientFactory(trans, thrift.NewTBinaryProtocolFactoryConf(cfg)).GetVersion(context.Background())
}

// exchange sends one request on a new connection and reads the first line of the answer.
func exchange(addr, send string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(3 * time.Second)); err != nil {
		return "", err
	}
	if _, err := c.Write([]byte(send)); err != nil {
		return "", err
	}
	return bufio.NewReader(c).ReadString('\n')
}

// A token with an unauthenticated port open beyond loopback would look like
// it guards the broker while it does not: the broker refuses to start, naming
// the way out.
func TestTokenWithOpenPortsRefused(t *testing.T) {
	out, err := exec.Command(binary, "start", "--token", "s3cret", "--beanstalk", "0.0.0.0:0", "--rpc", "").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "[beanstalk] addr = 0.0.0.0:0 listens beyond loopback") ||
		!strings.Contains(string(out), "allow_open_ports") {
		t.Fatalf("start with a token and an open beanstalkd port: %v\n%s", err, out)
	}
}

// gmq status reads and sets the server status through a broker's HTTP API,
// and fails with a message and exit code 1 for an unknown status.
func TestStatusCommand(t *testing.T) {
	srv := redistest.Start(t)
	b := startBroker(t, srv.URL())
	status := func(args ...string) (string, error) {
		out, err := exec.Command(binary, append([]string{"status", "--url", b.url("")}, args...)...).CombinedOutput()
		return string(out), err
	}
	if out, err := status(); err != nil || out != "up\n" {
		t.Fatalf("gmq status: %q %v", out, err)
	}
	if out, err := status("readonly"); err != nil || out != "readonly\n" {
		t.Fatalf("gmq status readonly: %q %v", out, err)
	}
	if a, _ := b.do("POST", "/api/v1/jobs", `{"topic":"t","body":"x"}`); a.code != 503 {
		t.Fatalf("push while read-only: %d", a.code)
	}
	out, err := status("sideways")
	if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 1 || !strings.Contains(out, "unknown status") {
		t.Fatalf("gmq status sideways: %q %v", out, err)
	}
	if out, err := status("up"); err != nil || out != "up\n" {
		t.Fatalf("gmq status up: %q %v", out, err)
	}
}

// SIGHUP and kestrel's reload re-read conf.ini's topic settings.
func TestReloadTopicSettings(t *testing.T) {
	srv := redistest.Start(t)
	b := startBroker(t, srv.URL())
	b.kill()
	writeConf := func(maxItems int) {
		t.Helper()
		text := fmt.Sprintf("[redis]\nbuckets = 4\n[topic.x]\nmax_items = %d\n", maxItems)
		if err := os.WriteFile(b.conf, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeConf(1)
	b.start()
	push := func() int {
		a, _ := b.do("POST", "/api/v1/jobs", `{"topic":"x","body":"b"}`)
		return a.code
	}
	if code := push(); code != 201 {
		t.Fatalf("first push: %d", code)
	}
	if code := push(); code != 507 {
		t.Fatalf("push over max_items = 1: %d, want 507", code)
	}
	writeConf(3)
	if err := b.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute) // only for a reload that never applies
	for push() != 201 {
		if time.Now().After(deadline) {
			t.Fatalf("max_items = 3 not applied after SIGHUP:\n%s", b.log)
		}
		time.Sleep(50 * time.Millisecond)
	}
	writeConf(1)
	if line, err := exchange(b.kestrel, "reload\r\n"); err != nil || line != "Reloaded config.\r\n" {
		t.Fatalf("kestrel reload: %q %v", line, err)
	}
	if code := push(); code != 507 {
		t.Fatalf("push after the reload back to max_items = 1: %d, want 507", code)
	}
}

// With [kestrel] allow_shutdown, kestrel's shutdown stops the broker
// gracefully: exit code 0.
func TestKestrelShutdown(t *testing.T) {
	srv := redistest.Start(t)
	b := startBroker(t, srv.URL())
	b.restartWith("", "[redis]\nbuckets = 4\n[kestrel]\nallow_shutdown = true\n")
	if line, err := exchange(b.kestrel, "shutdown\r\n"); err == nil || line != "" {
		t.Fatalf("shutdown answered %q %v; want the connection closed", line, err)
	}
	b.exitsCleanly(t, 10*time.Second, "kestrel's shutdown")
}

// The admin commands against a live broker: each a thin client of the HTTP
// API, tables for people, --json for scripts, exit codes 0 / 1 / 2.
func TestAdminCommands(t *testing.T) {
	t.Parallel() // correctness, not timing: it may share the cores with the others like it
	srv := redistest.Start(t)
	b := startBroker(t, srv.URL())
	gmq := func(args ...string) (string, int) {
		cmd := exec.Command(binary, args...)
		cmd.Env = append(os.Environ(), "GMQ_URL="+b.url(""))
		out, err := cmd.CombinedOutput()
		code := 0
		if exit, ok := err.(*exec.ExitError); ok {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), code
	}
	must := func(want string, args ...string) string {
		t.Helper()
		out, code := gmq(args...)
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("gmq %v: exit %d\n%s\nwant %q in it", args, code, out, want)
		}
		return out
	}
	id := strings.TrimSpace(must("", "push", "mail", "hello\x1b[2J", "--priority", "5", "--ttr", "30"))
	must("", "push", "--delay", "60", "mail", "later")
	must("mail", "topics")
	must(`"ready": 1`, "topic", "mail", "--json") // --json: the API's JSON, key names intact
	must("ready", "topic", "mail")                // a table for people
	if out := must("hello", "peek", "mail"); strings.Contains(out, "\x1b") {
		t.Fatalf("a body's control characters reach the terminal:\n%q", out)
	}
	must("later", "peek", "mail", "delayed")
	must(`"priority": 5`, "job", id, "--json")
	must(`"state": "reserved"`, "pop", "mail", "--json", "--timeout", "1")
	must("state", "fail", id, "smtp 550")
	must("paused", "pause", "mail", "60")
	must("kicked", "kick", "mail")
	must("deleted", "delete", id)
	must("pushed", "stats")
	must(`"total_jobs"`, "stats", "--json")
	id = strings.TrimSpace(must("", "push", "work", "again")) // mail is paused
	must("attempt", "pop", "work")
	must("time_left", "touch", id, "--attempt", "1")
	must("ready", "release", id, "--priority", "3")
	must(`"acked"`, "--json", "ack", id)
	must("(no job)", "pop", "empty", "--timeout", "0.1")
	must("readonly", "status", "readonly")
	must("up", "status", "up")
	for _, tc := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"job", "nobody"}, 1, "404"},
		{[]string{"delete", "nobody"}, 1, "not found"},
		{[]string{"push", "bad topic", "x"}, 1, "400"},
		{[]string{"push", "onlytopic"}, 2, "usage: gmq push TOPIC BODY"},
		{[]string{"pause", "mail", "soon"}, 2, "SECONDS"},
		{[]string{"stats", "--bogus"}, 2, "bogus"},
		{[]string{"status", "sideways"}, 1, "unknown status"},
		{[]string{"stats", "--url", "http://127.0.0.1:1"}, 1, "the broker at http://127.0.0.1:1"},
	} {
		if out, code := gmq(tc.args...); code != tc.code || !strings.Contains(out, tc.says) {
			t.Errorf("gmq %v: exit %d %q, want %d with %q", tc.args, code, out, tc.code, tc.says)
		}
	}
}

// TestFailedRequestLoggedOnce: an HTTP request that fails with a 5xx is one
// log line, with its status and its cause (it was two: the cause, then the
// request).
func TestFailedRequestLoggedOnce(t *testing.T) {
	t.Parallel()
	redis := redistest.Start(t)
	b := startBroker(t, redis.URL())
	if reply, err := redis.Do("CONFIG", "SET", "maxmemory", "1"); err != nil || reply != "+OK" {
		t.Fatalf("CONFIG SET maxmemory: %q %v", reply, err)
	}
	if a, err := b.do("POST", "/api/v1/jobs", `{"topic":"log-once","body":"x"}`); err != nil || a.code != 503 {
		t.Fatalf("push at maxmemory: %v %v", a, err)
	}
	waitForLog(t, b, "status=503")
	var lines []string
	for _, line := range strings.Split(b.log.String(), "\n") {
		if strings.Contains(line, "path=/api/v1/jobs") {
			lines = append(lines, line)
		}
	}
	if len(lines) != 1 || !strings.Contains(lines[0], "status=503") || !strings.Contains(lines[0], "err=") {
		t.Fatalf("the failed push's log lines: %q, want one with its status and its cause", lines)
	}
}
