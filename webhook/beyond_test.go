package webhook_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
	"github.com/gmq/gmq/internal/redistest"
	"github.com/gmq/gmq/job"
)

// TestDeliveryPastEveryWait: a topic idle for longer than the loop's long
// poll (5 s) still has a job pushed then delivered at once, and a request
// that takes longer than [server] request_timeout (5 s), within its
// deliver_timeout, acks its job on its first attempt. Tests that push at
// once and answer in milliseconds see neither wait run out.
func TestDeliveryPastEveryWait(t *testing.T) {
	e := newEndpoint(t, func(_ int, _ map[string]any, w http.ResponseWriter) {
		time.Sleep(6 * time.Second) // past request_timeout, under deliver_timeout
		w.Write([]byte(`"slow but done"`))
	})
	b := delivering(t, "hooks", e.srv.URL, job.TopicConfig{job.DeliverTimeout: "20", "keep_completed": "60"}, nil)
	brokertest.Eventually(t, "the topic delivering", func() bool { return len(b.Broker.Deliverer().Running()) == 1 })
	time.Sleep(6 * time.Second) // the loop's first long poll runs out with nothing: the state this test is about
	id := push(t, b, "hooks", `"late"`)
	brokertest.Eventually(t, "the job completed", func() bool {
		_, j := jobOf(t, b, id)
		return j["state"] == "completed"
	})
	_, j := jobOf(t, b, id)
	if j["attempt"] != 1.0 || j["failures"] != 0.0 || j["result"] != "slow but done" {
		t.Fatalf("the job completed so: %v", j)
	}
	e.mu.Lock()
	n := len(e.got)
	e.mu.Unlock()
	if n != 1 {
		t.Fatalf("%d requests for one job", n)
	}
	e.check()
}

// TestDeliveryOnCluster: two brokers on a 3-master Redis Cluster deliver
// topics whose buckets lie on every master: the marks are found in every
// bucket's slot, and every job is delivered once.
func TestDeliveryOnCluster(t *testing.T) {
	c := redistest.StartCluster(t, 3, 0)
	e := newEndpoint(t, func(_ int, _ map[string]any, w http.ResponseWriter) { w.WriteHeader(200) })
	topics := map[string]job.TopicConfig{}
	for i := range 8 {
		topics[fmt.Sprintf("hooks-%d", i)] = job.TopicConfig{job.DeliverTo: e.srv.URL, job.DeliverSecret: secret}
	}
	tweak := func(cfg *config.Config) {
		cfg.Buckets, cfg.Topics = 16, topics
		cfg.WebhookAllowHosts, cfg.WebhookScan = []string{"127.0.0.1"}, 20*time.Millisecond
	}
	a := brokertest.StartURL(t, c.URL(), tweak)
	b := brokertest.StartURL(t, c.URL(), tweak)
	brokertest.Eventually(t, "both brokers delivering the 8 topics", func() bool {
		return len(a.Broker.Deliverer().Running()) == 8 && len(b.Broker.Deliverer().Running()) == 8
	})
	var jobs []string
	for i := range 80 {
		jobs = append(jobs, fmt.Sprintf(`{"topic":"hooks-%d","body":{"n":%d}}`, i%8, i))
	}
	brokertest.MustCall(t, http.StatusCreated, "POST", a.URL+"/api/v1/jobs/batch", `{"jobs":[`+strings.Join(jobs, ",")+`]}`)
	brokertest.Eventually(t, "every job delivered", func() bool { return e.count.Load() >= 80 })
	e.check()
	e.mu.Lock()
	defer e.mu.Unlock()
	seen := map[string]int{}
	for _, j := range e.got {
		seen[fmt.Sprint(j["body"])]++
	}
	if len(e.got) != 80 || len(seen) != 80 {
		t.Fatalf("%d requests for 80 jobs (%d different)", len(e.got), len(seen))
	}
}
