package webhook_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
	"github.com/gmq/gmq/job"
	"github.com/gmq/gmq/webhook"
)

// rawEndpoint answers every connection with answer, written as raw bytes
// after the request's headers are read, then closes it.
func rawEndpoint(t *testing.T, answer func(c net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil || line == "\r\n" {
						break
					}
				}
				answer(c)
			}()
		}
	}()
	return "http://" + ln.Addr().String() + "/"
}

// TestHostileAnswers: what an endpoint sends cannot grow the broker or the
// job beyond their bounds, and a 2xx cut short still acks.
func TestHostileAnswers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer func(c net.Conn)
		check  func(t *testing.T, j map[string]any)
	}{
		{"a status line of a megabyte", func(c net.Conn) {
			c.Write([]byte("HTTP/1.1 " + strings.Repeat("\x01", 1<<20) + "\r\n\r\n"))
		}, func(t *testing.T, j map[string]any) {
			if r := fmt.Sprint(j["last_error"]); j["failures"] != 1.0 || len(r) > 400 {
				t.Fatalf("failed so (%d bytes of reason): %.500v", len(r), j)
			}
		}},
		{"headers of 100 KB", func(c net.Conn) {
			c.Write([]byte("HTTP/1.1 200 OK\r\nX-Big: " + strings.Repeat("a", 100<<10) + "\r\nContent-Length: 0\r\n\r\n"))
		}, func(t *testing.T, j map[string]any) {
			if r := fmt.Sprint(j["last_error"]); j["failures"] != 1.0 || !strings.Contains(r, "header") {
				t.Fatalf("failed so: %.500v", j)
			}
		}},
		{"a 200 whose body is cut short", func(c net.Conn) {
			c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"half"))
		}, func(t *testing.T, j map[string]any) {
			if j["state"] != "completed" || j["failures"] != 0.0 || j["result"] != nil {
				t.Fatalf("acked so: %v", j)
			}
		}},
		{"Retry-After 0", func(c net.Conn) {
			c.Write([]byte("HTTP/1.1 503 Busy\r\nRetry-After: 0\r\nContent-Length: 0\r\n\r\n"))
		}, func(t *testing.T, j map[string]any) {
			if j["releases"] != 1.0 || j["failures"] != 0.0 || j["state"] != "delayed" || j["delay"].(float64) < 1 {
				t.Fatalf("released so: %v (at least %v)", j, webhook.MinRetryAfter)
			}
		}},
		{"Retry-After of a century", func(c net.Conn) {
			c.Write([]byte("HTTP/1.1 429 Slow down\r\nRetry-After: 3153600000\r\nContent-Length: 0\r\n\r\n"))
		}, func(t *testing.T, j map[string]any) {
			if j["releases"] != 1.0 || j["state"] != "delayed" || j["delay"].(float64) > webhook.MaxRetryAfter.Seconds() {
				t.Fatalf("released so: %v (at most %v)", j, webhook.MaxRetryAfter)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := rawEndpoint(t, tc.answer)
			b := delivering(t, "hooks", url, job.TopicConfig{"keep_completed": "60", "backoff": "fixed", "backoff_base": "3600"}, nil)
			id := push(t, b, "hooks", `"x"`)
			var j map[string]any
			brokertest.Eventually(t, "the job settled", func() bool {
				_, j = jobOf(t, b, id)
				return j["reserves"] == 1.0 && j["state"] != "reserved"
			})
			tc.check(t, j)
			_, topic := brokertest.Call(t, "GET", b.URL+"/api/v1/topics/hooks", "")
			if d := topic["delivery"].(map[string]any); len(fmt.Sprint(d["last_error"])) > 400 {
				t.Fatalf("the topic's view keeps a last error of %d bytes", len(fmt.Sprint(d["last_error"])))
			}
		})
	}
}

// TestBytesBodyAsBase64: a body that is not valid UTF-8 (a beanstalkd put
// of bytes) is delivered whole, as base64, not with its bytes replaced.
func TestBytesBodyAsBase64(t *testing.T) {
	e := newEndpoint(t, func(_ int, _ map[string]any, w http.ResponseWriter) { w.WriteHeader(200) })
	b := delivering(t, "hooks", e.srv.URL, nil, nil)
	raw := "\x00\x01\xfe\xff bytes"
	if _, err := b.Dispatcher.Push(context.Background(), job.Spec{Topic: "hooks", Body: raw, TTR: time.Minute, Priority: 1}); err != nil {
		t.Fatal(err)
	}
	brokertest.Eventually(t, "the job delivered", func() bool { return e.count.Load() == 1 })
	e.check()
	e.mu.Lock()
	got := e.got[0]
	e.mu.Unlock()
	if got["body_encoding"] != "base64" || got["body"] != base64.StdEncoding.EncodeToString([]byte(raw)) {
		t.Fatalf("delivered %v", got)
	}
}

// TestInFlightAcrossRestartedLoops: deliver_to removed and set again while
// requests are open starts the topic's loop again, and the new loop counts
// the requests the old one left open: max_in_flight holds.
func TestInFlightAcrossRestartedLoops(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	let := func() { once.Do(func() { close(release) }) }
	e := newEndpoint(t, func(_ int, _ map[string]any, w http.ResponseWriter) {
		<-release
		w.WriteHeader(200)
	})
	t.Cleanup(let) // before the endpoint's Close (cleanups run last first), which waits for its requests
	b := brokertest.Fresh(t, func(c *config.Config) {
		c.WebhookAllowHosts, c.WebhookScan, c.WebhookMaxInFlight = []string{"127.0.0.1"}, 20*time.Millisecond, 4
	})
	d := b.Dispatcher
	if err := d.Topic("hooks").SetConfig(context.Background(), job.TopicConfig{job.DeliverTo: e.srv.URL}); err != nil {
		t.Fatal(err)
	}
	var jobs []string
	for i := range 12 {
		jobs = append(jobs, fmt.Sprintf(`{"topic":"hooks","body":{"n":%d}}`, i))
	}
	brokertest.MustCall(t, http.StatusCreated, "POST", b.URL+"/api/v1/jobs/batch", `{"jobs":[`+strings.Join(jobs, ",")+`]}`)
	open := func() int { e.mu.Lock(); defer e.mu.Unlock(); return e.open }
	brokertest.Eventually(t, "4 requests open", func() bool { return open() == 4 })
	if err := d.Topic("hooks").SetConfig(context.Background(), job.TopicConfig{job.DeliverTo: ""}); err != nil {
		t.Fatal(err)
	}
	brokertest.Eventually(t, "the loop stopped", func() bool { return len(b.Broker.Deliverer().Running()) == 0 })
	if err := d.Topic("hooks").SetConfig(context.Background(), job.TopicConfig{job.DeliverTo: e.srv.URL}); err != nil {
		t.Fatal(err)
	}
	brokertest.Eventually(t, "the loop running again", func() bool { return len(b.Broker.Deliverer().Running()) == 1 })
	st, _ := b.Broker.Deliverer().Stats("hooks")
	let()
	brokertest.Eventually(t, "every job delivered", func() bool {
		_, s := brokertest.Call(t, "GET", b.URL+"/api/v1/topics/hooks", "")
		return s["total_deletes"] == 12.0
	})
	e.mu.Lock()
	most := e.mostOpen
	e.mu.Unlock()
	if most > 4 || st.InFlight > 4 {
		t.Fatalf("%d requests open at once (%d when the loop came back); max_in_flight is 4", most, st.InFlight)
	}
}
