package web_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gmq/gmq/config"
	"github.com/gmq/gmq/internal/testbroker"
)

// raw sends bytes on a new connection to the broker's HTTP port and returns it
// with a reader, for requests no well-behaved client would send.
func raw(t *testing.T, b *testbroker.Broker, send string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", b.HTTP.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, send); err != nil {
		t.Fatal(err)
	}
	return c, bufio.NewReader(c)
}

// status reads the status code of the next answer on a raw connection.
func status(t *testing.T, c net.Conn, r *bufio.Reader, within time.Duration) int {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(within))
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatalf("no answer within %v: %v", within, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// closed says whether the broker closes the connection within d.
func closed(c net.Conn, r *bufio.Reader, d time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(d))
	_, err := r.ReadByte()
	return err == io.EOF || (err != nil && !strings.Contains(err.Error(), "timeout"))
}

func TestSlowIdleAndLongPollConnections(t *testing.T) {
	b := testbroker.Fresh(t, func(c *config.Config) { c.ReadTimeout, c.IdleTimeout = 400*time.Millisecond, 400*time.Millisecond })

	t.Run("a body that never finishes is cut off at read_timeout", func(t *testing.T) {
		c, r := raw(t, b, "POST /api/v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"topic\":")
		if code := status(t, c, r, 3*time.Second); code != http.StatusRequestTimeout && code != http.StatusBadRequest {
			t.Fatalf("status %d, want 408", code)
		}
		if !closed(c, r, 2*time.Second) {
			t.Fatal("the connection stays open")
		}
	})
	t.Run("an idle keep-alive connection is closed at idle_timeout", func(t *testing.T) {
		c, r := raw(t, b, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
		if code := status(t, c, r, 2*time.Second); code != 200 {
			t.Fatalf("status %d", code)
		}
		if !closed(c, r, 3*time.Second) {
			t.Fatal("the idle connection stays open")
		}
	})
	t.Run("a long poll may wait past read_timeout", func(t *testing.T) {
		go func() {
			time.Sleep(time.Second)
			mustCall(t, 201, "POST", b.URL+"/api/v1/jobs", `{"topic":"lp","body":"late"}`)
		}()
		out := mustCall(t, 200, "POST", b.URL+"/api/v1/pop", `{"topics":["lp"],"timeout":3}`)
		if out["body"] != "late" {
			t.Fatalf("popped %v", out)
		}
	})
}

func TestMalformedAndOversizedBodies(t *testing.T) {
	b := broker(t)
	cases := []struct {
		name, send string
		want       int
	}{
		{"malformed chunked encoding", "POST /api/v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n", 400},
		{"a length over the limit, refused unread", "POST /api/v1/jobs/batch HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1073741824\r\n\r\n{", 413},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conn, r := raw(t, b, c.send)
			if code := status(t, conn, r, 3*time.Second); code != c.want {
				t.Fatalf("status %d, want %d", code, c.want)
			}
		})
	}
}
