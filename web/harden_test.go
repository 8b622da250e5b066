package web_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
)

// raw sends bytes on a new connection to the broker's HTTP port and returns it
// with a reader, for requests no well-behaved client would send.
func raw(t *testing.T, b *brokertest.Broker, send string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", b.HTTPAddr)
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
// The tests give status and closed a minute: what they wait for comes at
// once or at a timeout of under a second, and only a failure waits longer.
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
	b := brokertest.Fresh(t, func(c *config.Config) { c.ReadTimeout, c.IdleTimeout = 400*time.Millisecond, 400*time.Millisecond })

	t.Run("a body that never finishes is cut off at read_timeout", func(t *testing.T) {
		c, r := raw(t, b, "POST /api/v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"topic\":")
		if code := status(t, c, r, time.Minute); code != http.StatusRequestTimeout && code != http.StatusBadRequest {
			t.Fatalf("status %d, want 408", code)
		}
		if !closed(c, r, time.Minute) {
			t.Fatal("the connection stays open")
		}
	})
	t.Run("an idle keep-alive connection is closed at idle_timeout", func(t *testing.T) {
		c, r := raw(t, b, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
		if code := status(t, c, r, time.Minute); code != 200 {
			t.Fatalf("status %d", code)
		}
		if !closed(c, r, time.Minute) {
			t.Fatal("the idle connection stays open")
		}
	})
	t.Run("a long poll may wait past read_timeout", func(t *testing.T) {
		go func() {
			time.Sleep(time.Second)
			mustCall(t, 201, "POST", b.URL+"/api/v1/jobs", `{"topic":"lp","body":"late"}`)
		}()
		out := mustCall(t, 200, "POST", b.URL+"/api/v1/pop", `{"topics":["lp"],"timeout":60}`) // answered at the push: 60 s only for a failure
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
			if code := status(t, conn, r, time.Minute); code != c.want {
				t.Fatalf("status %d, want %d", code, c.want)
			}
		})
	}
}

// Redis at maxmemory: a push answers 503 with a plain reason and Retry-After
// (not 500 with Redis's raw reply and a script hash), while pops and acks,
// which free memory, keep working.
func TestRedisOutOfMemory(t *testing.T) {
	b := broker(t)
	api := b.URL + "/api/v1"
	mustCall(t, 201, "POST", api+"/jobs", `{"topic":"oom","body":"1","TTR":60}`)
	mustCall(t, 201, "POST", api+"/jobs", `{"topic":"oom","body":"2","TTR":60}`)
	mustCall(t, 201, "POST", api+"/jobs", `{"id":"oom-patch","topic":"oom-p","body":"small","delay":3600}`)
	redis := brokertest.Redis()
	if reply, err := redis.Do("CONFIG", "SET", "maxmemory", "1"); err != nil || reply != "+OK" {
		t.Fatalf("CONFIG SET maxmemory: %q %v", reply, err)
	}
	t.Cleanup(func() { _, _ = redis.Do("CONFIG", "SET", "maxmemory", "0") })

	req, _ := http.NewRequest("POST", api+"/jobs", strings.NewReader(`{"topic":"oom","body":"3"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(data), "out of memory") ||
		strings.Contains(string(data), "script") {
		t.Fatalf("push at maxmemory: %d %q Retry-After %q, want 503 saying Redis is out of memory", resp.StatusCode, data, resp.Header.Get("Retry-After"))
	}
	// An update that grows a body is a write that grows memory too: refused
	// whole (update_job runs without allow-oom), the job as it was.
	big := strings.Repeat("x", 1000)
	req, _ = http.NewRequest("PATCH", api+"/jobs/oom-patch", strings.NewReader(`{"body":"`+big+`"}`))
	req.Header.Set("Content-Type", "application/json")
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 {
		t.Fatalf("an update growing a body at maxmemory: %d, want 503", resp.StatusCode)
	}
	if got := mustCall(t, 200, "GET", api+"/jobs/oom-patch", ``); got["body"] != "small" {
		t.Fatalf("the job after a refused update: %v", got)
	}
	job := mustCall(t, 200, "GET", api+"/pop?topic=oom", ``)
	mustCall(t, 200, "POST", api+"/jobs/"+job["id"].(string)+"/ack", ``)
	mustCall(t, 200, "POST", api+"/ack", `{"jobs":[{"id":"`+mustCall(t, 200, "GET", api+"/pop?topic=oom", ``)["id"].(string)+`"}]}`)
}

// Bodies reserve memory as their bytes arrive, not as their length
// announces: connections that declare the largest body and send nothing
// must not hold the budget and lock everyone else out until read_timeout.
func TestAnnouncedBodiesHoldNoBudget(t *testing.T) {
	b := brokertest.Fresh(t, func(c *config.Config) { c.BodyMemory, c.MaxRequestBody = 1<<20, 1<<20 })
	for range 8 {
		raw(t, b, "POST /api/v1/jobs/batch HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1048576\r\n\r\n")
	}
	time.Sleep(200 * time.Millisecond) // let the broker start reading them
	start := time.Now()
	mustCall(t, 201, "POST", b.URL+"/api/v1/jobs", `{"topic":"t","body":"x"}`)
	// The 201 says no budget was held (a held budget never frees here: the
	// push would be refused after budget.Wait). Milliseconds on an idle
	// machine; 30 s is the margin for a loaded one.
	if took := time.Since(start); took > 30*time.Second {
		t.Fatalf("a small push took %v behind bodies that were only announced", took)
	}
}
