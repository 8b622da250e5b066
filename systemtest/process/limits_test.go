package process

import (
	"bufio"
	"context"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/gmq/gmq/internal/redistest"
	thriftwire "github.com/gmq/gmq/kestrel/thrift/wire"
	"github.com/gmq/gmq/systemtest/harness"
)

// Over [server] max_connections, a new connection is told why and closed.
func TestConnectionLimit(t *testing.T) {
	srv := redistest.Start(t)
	b := harness.StartBroker(t, srv.URL())
	if err := os.WriteFile(b.Conf, []byte("[redis]\nbuckets = 4\n[server]\nmax_connections = 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b.Kill()
	b.Start()
	for range 3 {
		c, err := net.Dial("tcp", b.Beanstalk)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	time.Sleep(100 * time.Millisecond)
	c, err := net.Dial("tcp", b.Beanstalk)
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
		c, err := net.Dial("tcp", b.Beanstalk)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
		_, _ = bufio.NewReader(c).ReadString('\n')
		c.Close()
	}
	// The broker's log reaches us through a pipe: give it a moment.
	harness.WaitForLog(t, b, "max_connections reached")
	time.Sleep(200 * time.Millisecond)
	if n := strings.Count(b.Log.String(), "max_connections reached"); n != 1 {
		t.Fatalf("%d log lines for one burst of 21 refused connections, want 1:\n%s", n, b.Log)
	}
}

// Running out of file descriptors must not stop the broker: on every port,
// connections past the limit wait (in the kernel's backlog) until
// descriptors free up, and the broker logs a line per burst, not per
// connection. Before, the first EMFILE on the beanstalkd or JSON-RPC port
// ended the process ("accept4: too many open files").
func TestFileDescriptorExhaustion(t *testing.T) {
	srv := redistest.Start(t)
	b := harness.StartBroker(t, srv.URL())
	b.Kill()
	b.FileLimit = 64
	// Caps set by hand (0, the default, would fit them to the 64 files).
	if err := os.WriteFile(b.Conf, []byte("[redis]\nbuckets = 4\n[bucket]\nmax_sleep = 200ms\n[server]\nmax_connections = 20000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b.Start()
	harness.WaitForLog(t, b, "max_connections") // the caps (4 x 20000) do not fit in 64 files: said at start
	var held []net.Conn
	for _, addr := range []string{b.Beanstalk, b.RPC, b.Kestrel, b.Text, b.Thrift, b.Addr} {
		for range 80 {
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err != nil {
				t.Fatalf("dial %s: %v", addr, err)
			}
			held = append(held, c)
		}
	}
	harness.WaitForLog(t, b, "accept failed")
	time.Sleep(500 * time.Millisecond)
	select {
	case <-b.Done:
		t.Fatalf("the broker exited when out of file descriptors:\n%s", b.Log)
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
		{b.Beanstalk, sending("list-tubes\r\n"), "OK "},
		{b.RPC, sending(`{"method":"Service.Pop","params":[{"topic":"none"}],"id":1}` + "\n"), `"id":1`},
		{b.Kestrel, sending("version\r\n"), "VERSION "},
		{b.Text, sending("version\n"), ":"},
		{b.Thrift, thriftVersion, "."},
		{b.Addr, sending("GET /healthz HTTP/1.0\r\n\r\n"), "HTTP/1.0 200"},
	} {
		for {
			line, err := check.ask(check.addr)
			if err == nil && strings.Contains(line, check.want) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s after the flood: %q %v, want %q\n%s", check.addr, line, err, check.want, b.Log)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if n := strings.Count(b.Log.String(), "accept failed"); n > 8 {
		t.Fatalf("%d log lines about failed accepts, want one per burst and listener:\n%s", n, b.Log)
	}
}

// sending is exchange of send, for any address.
func sending(send string) func(addr string) (string, error) {
	return func(addr string) (string, error) { return harness.Exchange(addr, send) }
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

// TestFailedRequestLoggedOnce: an HTTP request that fails with a 5xx is one
// log line, with its status and its cause (it was two: the cause, then the
// request).
func TestFailedRequestLoggedOnce(t *testing.T) {
	t.Parallel()
	redis := redistest.Start(t)
	b := harness.StartBroker(t, redis.URL())
	if reply, err := redis.Do("CONFIG", "SET", "maxmemory", "1"); err != nil || reply != "+OK" {
		t.Fatalf("CONFIG SET maxmemory: %q %v", reply, err)
	}
	if a, err := b.Do("POST", "/api/v1/jobs", `{"topic":"log-once","body":"x"}`); err != nil || a.Code != 503 {
		t.Fatalf("push at maxmemory: %v %v", a, err)
	}
	harness.WaitForLog(t, b, "status=503")
	var lines []string
	for _, line := range strings.Split(b.Log.String(), "\n") {
		if strings.Contains(line, "path=/api/v1/jobs") {
			lines = append(lines, line)
		}
	}
	if len(lines) != 1 || !strings.Contains(lines[0], "status=503") || !strings.Contains(lines[0], "err=") {
		t.Fatalf("the failed push's log lines: %q, want one with its status and its cause", lines)
	}
}
