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
