package webhook_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/job"
)

// TestDeliveryObeysPauseAndGroups: a delivering topic's jobs are popped as
// a consumer's are, so a pause holds them back until it ends, and
// group_max_reserved = 1 keeps one request open per group.
func TestDeliveryObeysPauseAndGroups(t *testing.T) {
	type seen struct {
		at    time.Time
		group string
	}
	arrived := make(chan seen, 100)
	open := map[string]int{}
	mostOpen := 0
	var e *endpoint
	e = newEndpoint(t, func(_ int, j map[string]any, w http.ResponseWriter) {
		g := fmt.Sprint(j["group"])
		e.mu.Lock()
		open[g]++
		mostOpen = max(mostOpen, open[g])
		e.mu.Unlock()
		arrived <- seen{time.Now(), g}
		time.Sleep(30 * time.Millisecond)
		e.mu.Lock()
		open[g]--
		e.mu.Unlock()
		w.WriteHeader(200)
	})
	b := delivering(t, "hooks", e.srv.URL, job.TopicConfig{"group_max_reserved": "1"}, nil)
	push(t, b, "hooks", `{"later":true}`+`,"delay":3600`) // the topic comes to be, so that it can be paused
	brokertest.MustCall(t, 200, "POST", b.URL+"/api/v1/topics/hooks/pause", `{"seconds":1}`)
	_, stats := brokertest.Call(t, "GET", b.URL+"/api/v1/topics/hooks", "")
	pausedFor := time.Duration(stats["pause_time_left"].(float64) * float64(time.Second))
	until := time.Now().Add(pausedFor - 100*time.Millisecond) // the pause's end, give or take a round trip
	var jobs []string
	for i := range 10 {
		jobs = append(jobs, fmt.Sprintf(`{"topic":"hooks","body":{"n":%d},"group":"g%d"}`, i, i%2))
	}
	brokertest.MustCall(t, http.StatusCreated, "POST", b.URL+"/api/v1/jobs/batch", `{"jobs":[`+strings.Join(jobs, ",")+`]}`)
	for range 10 {
		s := <-arrived
		if s.at.Before(until) {
			t.Fatalf("a job delivered %v before its topic's pause ended", until.Sub(s.at))
		}
	}
	e.check()
	e.mu.Lock()
	defer e.mu.Unlock()
	if mostOpen != 1 {
		t.Fatalf("a group had %d requests open at once; group_max_reserved is 1", mostOpen)
	}
}

// TestDeliverySlowRetried: an endpoint slower than deliver_timeout is cut,
// the job failed and tried again after its backoff; the next attempt,
// answered in time, acks it.
func TestDeliverySlowRetried(t *testing.T) {
	e := newEndpoint(t, func(n int, _ map[string]any, w http.ResponseWriter) {
		if n == 1 {
			time.Sleep(1500 * time.Millisecond) // past deliver_timeout
		}
		w.WriteHeader(200)
	})
	b := delivering(t, "hooks", e.srv.URL, job.TopicConfig{job.DeliverTimeout: "1", "keep_completed": "60",
		"backoff": "fixed", "backoff_base": "0"}, nil)
	id := push(t, b, "hooks", `"slow first"`)
	brokertest.Eventually(t, "the job completed", func() bool {
		_, j := jobOf(t, b, id)
		return j["state"] == "completed"
	})
	_, j := jobOf(t, b, id)
	if j["attempt"] != 2.0 || j["failures"] != 1.0 || !strings.Contains(fmt.Sprint(j["last_error"]), "no answer within 1s") {
		t.Fatalf("the job completed so: %v", j)
	}
	e.check()
}

// TestDeliveryObeysRate: a topic's rate spaces its deliveries as it
// spaces pops: 5 a second with a burst of 1 sends 6 jobs over at least a
// second (a slower machine only spaces them more).
func TestDeliveryObeysRate(t *testing.T) {
	arrived := make(chan time.Time, 10)
	e := newEndpoint(t, func(_ int, _ map[string]any, w http.ResponseWriter) {
		arrived <- time.Now()
		w.WriteHeader(200)
	})
	b := delivering(t, "hooks", e.srv.URL, job.TopicConfig{"rate": "5", "burst": "1"}, nil)
	var jobs []string
	for i := range 6 {
		jobs = append(jobs, fmt.Sprintf(`{"topic":"hooks","body":{"n":%d}}`, i))
	}
	brokertest.MustCall(t, http.StatusCreated, "POST", b.URL+"/api/v1/jobs/batch", `{"jobs":[`+strings.Join(jobs, ",")+`]}`)
	first := <-arrived
	var last time.Time
	for range 5 {
		last = <-arrived
	}
	if spread := last.Sub(first); spread < 900*time.Millisecond { // 5 tokens at 5/s: 1 s, less a token's refill race
		t.Fatalf("6 deliveries at rate 5/s took %v", spread)
	}
	e.check()
}
