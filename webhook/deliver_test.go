package webhook_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
	"github.com/gmq/gmq/job"
	"github.com/gmq/gmq/webhook"
)

func TestMain(m *testing.M) { brokertest.Main(m) }

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// endpoint is a test's receiver: it checks each request's signature and
// answers as answer says.
type endpoint struct {
	t      *testing.T
	srv    *httptest.Server
	answer func(n int, job map[string]any, w http.ResponseWriter)

	mu       sync.Mutex
	got      []map[string]any
	open     int
	mostOpen int
	bad      []string
	count    atomic.Int64
}

func newEndpoint(t *testing.T, answer func(n int, job map[string]any, w http.ResponseWriter)) *endpoint {
	e := &endpoint{t: t, answer: answer}
	e.srv = httptest.NewServer(http.HandlerFunc(e.serve))
	t.Cleanup(e.srv.Close)
	return e
}

func (e *endpoint) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	e.mu.Lock()
	e.open++
	e.mostOpen = max(e.mostOpen, e.open)
	e.mu.Unlock()
	defer func() { e.mu.Lock(); e.open--; e.mu.Unlock() }()
	at, _ := strconv.ParseInt(r.Header.Get("webhook-timestamp"), 10, 64)
	want, _ := webhook.Sign(secret, r.Header.Get("webhook-id"), at, body)
	var j map[string]any
	err := json.Unmarshal(body, &j)
	e.mu.Lock()
	switch {
	case r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json":
		e.bad = append(e.bad, r.Method+" "+r.Header.Get("Content-Type"))
	case r.Header.Get("webhook-signature") != want:
		e.bad = append(e.bad, "signature "+r.Header.Get("webhook-signature"))
	case time.Since(time.Unix(at, 0)).Abs() > time.Minute:
		e.bad = append(e.bad, "timestamp "+r.Header.Get("webhook-timestamp"))
	case err != nil:
		e.bad = append(e.bad, "body "+string(body))
	case r.Header.Get("gmq-job-id") != j["id"] || r.Header.Get("gmq-attempt") != fmt.Sprint(j["attempt"]) || r.Header.Get("gmq-topic") != j["topic"]:
		e.bad = append(e.bad, fmt.Sprintf("headers %v for %v", r.Header, j))
	}
	e.got = append(e.got, j)
	e.mu.Unlock()
	e.answer(int(e.count.Add(1)), j, w)
}

func (e *endpoint) check() {
	e.t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.bad) > 0 {
		e.t.Fatalf("%d requests were not as gmq sends them, the first: %s", len(e.bad), e.bad[0])
	}
}

// delivering starts a broker whose topic t delivers to url.
func delivering(t *testing.T, topic, url string, settings job.TopicConfig, tweak func(*config.Config)) *brokertest.Broker {
	return brokertest.Fresh(t, func(c *config.Config) {
		c.WebhookAllowHosts, c.WebhookScan = []string{"127.0.0.1"}, 20*time.Millisecond
		cfg := job.TopicConfig{job.DeliverTo: url, job.DeliverSecret: secret}
		for k, v := range settings {
			cfg[k] = v
		}
		c.Topics = map[string]job.TopicConfig{topic: cfg}
		if tweak != nil {
			tweak(c)
		}
	})
}

func push(t *testing.T, b *brokertest.Broker, topic, body string) string {
	t.Helper()
	got := brokertest.MustCall(t, http.StatusCreated, "POST", b.URL+"/api/v1/jobs", `{"topic":"`+topic+`","body":`+body+`}`)
	return got["id"].(string)
}

func jobOf(t *testing.T, b *brokertest.Broker, id string) (int, map[string]any) {
	t.Helper()
	return brokertest.Call(t, "GET", b.URL+"/api/v1/jobs/"+id, "")
}

// TestDeliverOutcomes: each kind of answer does to its job what the docs
// say: 2xx acks (its body the result), 429/503 with Retry-After releases
// for that long, other answers, redirects and a slow endpoint fail it.
func TestDeliverOutcomes(t *testing.T) {
	cases := []struct {
		name   string
		answer func(w http.ResponseWriter)
		check  func(t *testing.T, code int, j map[string]any)
	}{
		{"200 with a JSON body", func(w http.ResponseWriter) { w.Write([]byte(`{"charged": 12}`)) }, func(t *testing.T, code int, j map[string]any) {
			if code != 200 || j["state"] != "completed" || fmt.Sprint(j["result"]) != "map[charged:12]" {
				t.Fatalf("%d %v", code, j)
			}
		}},
		{"204", func(w http.ResponseWriter) { w.WriteHeader(204) }, func(t *testing.T, code int, j map[string]any) {
			if code != 200 || j["state"] != "completed" || j["result"] != nil {
				t.Fatalf("%d %v", code, j)
			}
		}},
		{"503 Retry-After", func(w http.ResponseWriter) { w.Header().Set("Retry-After", "120"); w.WriteHeader(503) }, func(t *testing.T, code int, j map[string]any) {
			if code != 200 || j["state"] != "delayed" || j["releases"] != 1.0 || j["failures"] != 0.0 || j["delay"].(float64) < 119 {
				t.Fatalf("%d %v", code, j)
			}
		}},
		{"429 without Retry-After", func(w http.ResponseWriter) { w.WriteHeader(429) }, func(t *testing.T, code int, j map[string]any) {
			if code != 200 || j["failures"] != 1.0 || !strings.Contains(fmt.Sprint(j["last_error"]), "HTTP 429") {
				t.Fatalf("%d %v", code, j)
			}
		}},
		{"500", func(w http.ResponseWriter) { w.WriteHeader(500); w.Write([]byte("database down")) }, func(t *testing.T, code int, j map[string]any) {
			if code != 200 || j["failures"] != 1.0 || !strings.Contains(fmt.Sprint(j["last_error"]), "HTTP 500: database down") {
				t.Fatalf("%d %v", code, j)
			}
		}},
		{"a redirect", func(w http.ResponseWriter) { w.Header().Set("Location", "http://169.254.169.254/"); w.WriteHeader(302) }, func(t *testing.T, code int, j map[string]any) {
			if code != 200 || j["failures"] != 1.0 || !strings.Contains(fmt.Sprint(j["last_error"]), "HTTP 302") {
				t.Fatalf("%d %v", code, j)
			}
		}},
		{"slower than deliver_timeout", func(w http.ResponseWriter) { time.Sleep(1500 * time.Millisecond) }, func(t *testing.T, code int, j map[string]any) {
			if code != 200 || j["failures"] != 1.0 || !strings.Contains(fmt.Sprint(j["last_error"]), "no answer within 1s") {
				t.Fatalf("%d %v", code, j)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEndpoint(t, func(n int, _ map[string]any, w http.ResponseWriter) {
				if n == 1 {
					tc.answer(w)
				} else {
					w.WriteHeader(500) // later attempts: not this case's
				}
			})
			b := delivering(t, "hooks", e.srv.URL+"/work", job.TopicConfig{"keep_completed": "60", job.DeliverTimeout: "1",
				"backoff": "fixed", "backoff_base": "3600", "max_attempts": "5"}, nil)
			id := push(t, b, "hooks", `{"order": 7}`)
			brokertest.Eventually(t, "the job delivered and settled", func() bool {
				_, j := jobOf(t, b, id)
				return e.count.Load() >= 1 && j["state"] != "reserved" && j["state"] != "ready"
			})
			code, j := jobOf(t, b, id)
			tc.check(t, code, j)
			e.check()
			e.mu.Lock()
			got := e.got[0]
			e.mu.Unlock()
			if got["id"] != id || got["topic"] != "hooks" || fmt.Sprint(got["body"]) != "map[order:7]" || got["attempt"] != 1.0 || got["token"] == "" {
				t.Fatalf("delivered %v", got)
			}
		})
	}
}

// TestDeliverManyWithinMaxReserved: two brokers deliver one topic, each
// allowed 16 requests at once, and the topic's max_reserved of 3 holds
// across both: the endpoint never has more than 3 open, and every job is
// acked once.
func TestDeliverManyWithinMaxReserved(t *testing.T) {
	e := newEndpoint(t, func(_ int, _ map[string]any, w http.ResponseWriter) {
		time.Sleep(20 * time.Millisecond)
		w.WriteHeader(200)
	})
	settings := job.TopicConfig{"max_reserved": "3"}
	a := delivering(t, "hooks", e.srv.URL, settings, nil)
	b := brokertest.Start(t, brokertest.Redis(), func(c *config.Config) {
		c.WebhookAllowHosts, c.WebhookScan = []string{"127.0.0.1"}, 20*time.Millisecond
		c.Topics = map[string]job.TopicConfig{"hooks": {job.DeliverTo: e.srv.URL, job.DeliverSecret: secret, "max_reserved": "3"}}
	})
	const n = 60
	var jobs []string
	for i := range n {
		var body strings.Builder
		fmt.Fprintf(&body, `{"topic":"hooks","body":{"n":%d}}`, i)
		jobs = append(jobs, body.String())
	}
	brokertest.MustCall(t, http.StatusCreated, "POST", a.URL+"/api/v1/jobs/batch", `{"jobs":[`+strings.Join(jobs, ",")+`]}`)
	brokertest.Eventually(t, "every job delivered", func() bool {
		_, s := brokertest.Call(t, "GET", a.URL+"/api/v1/topics/hooks", "")
		return s["ready"] == 0.0 && s["reserved"] == 0.0 && s["total_deletes"] == float64(n)
	})
	e.check()
	e.mu.Lock()
	most, got := e.mostOpen, len(e.got)
	seen := map[string]int{}
	for _, j := range e.got {
		seen[j["id"].(string)]++
	}
	e.mu.Unlock()
	if most > 3 {
		t.Fatalf("the endpoint had %d requests open at once; max_reserved is 3", most)
	}
	if got != n || len(seen) != n {
		t.Fatalf("%d requests for %d jobs (%d different)", got, n, len(seen))
	}
	// A delivery is counted once its ack has answered, a moment after the
	// topic's counters show it.
	var sa, sb job.WebhookStats
	brokertest.Eventually(t, "both brokers' counts add up", func() bool {
		sa, _ = a.Broker.Deliverer().Stats("hooks")
		sb, _ = b.Broker.Deliverer().Stats("hooks")
		return sa.Acked+sb.Acked == n && sa.Sent+sb.Sent == n
	})
	for _, br := range []*brokertest.Broker{a, b} {
		resp, err := http.Get(br.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		text, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		st, _ := br.Broker.Deliverer().Stats("hooks")
		for _, want := range []string{
			fmt.Sprintf(`gmq_delivery_duration_seconds_count{outcome="acked",topic="hooks"} %d`, st.Acked),
			`gmq_deliveries_in_flight{topic="hooks"} 0`,
		} {
			if st.Sent > 0 && !strings.Contains(string(text), want+"\n") {
				t.Errorf("/metrics has no line %q", want)
			}
		}
	}
	if sa.Acked == 0 || sb.Acked == 0 {
		t.Logf("one broker delivered them all: %+v, %+v", sa, sb) // possible, not expected
	}
}
