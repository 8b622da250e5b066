package broker_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
	"github.com/gmq/gmq/internal/redistest"
)

// call sends an HTTP request and decodes the JSON answer.
func call(t *testing.T, method, url, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var out map[string]any
	_ = json.Unmarshal(data, &out)
	return resp.StatusCode, out
}

func mustCall(t *testing.T, want int, method, url, body string) map[string]any {
	t.Helper()
	code, out := call(t, method, url, body)
	if code != want {
		t.Fatalf("%s %s %s: %d %v, want %d", method, url, body, code, out, want)
	}
	return out
}

// The broker's behaviour on a real Redis Cluster (3 masters, 3 replicas),
// two brokers on it: every script keeps to one slot (a CROSSSLOT error
// would fail the call), client ids live in other slots than their jobs, and
// a long poll on one broker is woken by a push on the other.
func TestOnRedisCluster(t *testing.T) {
	c := redistest.StartCluster(t, 3, 1)
	conf := func(cfg *config.Config) { cfg.Buckets = 16 }
	a := brokertest.StartURL(t, c.URL(), conf)
	b := brokertest.StartURL(t, c.URL(), conf)
	api, bapi := a.URL+"/api/v1", b.URL+"/api/v1"

	// Jobs over many topics (so over every master), with client ids.
	for i := range 40 {
		mustCall(t, 201, "POST", api+"/jobs", fmt.Sprintf(`{"id":"job-%d","topic":"t%d","body":"%d","TTR":30}`, i, i%8, i))
	}
	mustCall(t, 201, "POST", api+"/jobs/batch", `{"jobs":[{"topic":"t0","body":"b1"},{"topic":"t5","body":"b2","delay":0.2}]}`)
	for i := range 8 {
		j := mustCall(t, 200, "GET", fmt.Sprintf("%s/pop?topic=t%d", bapi, i), ``)
		mustCall(t, 200, "POST", bapi+"/jobs/"+j["id"].(string)+"/ack", fmt.Sprintf(`{"attempt":%v}`, j["attempt"]))
	}
	mustCall(t, 404, "GET", api+"/jobs/job-0", ``) // acked through the other broker, by its client id
	// release, bury, kick, touch, pause, fail, TTR redelivery.
	j := mustCall(t, 200, "GET", api+"/pop?topic=t1", ``)
	mustCall(t, 200, "POST", api+"/jobs/"+j["id"].(string)+"/release", `{"delay":0.1}`)
	j = mustCall(t, 200, "GET", api+"/pop?topic=t2", ``)
	mustCall(t, 200, "POST", api+"/jobs/"+j["id"].(string)+"/bury", ``)
	mustCall(t, 200, "POST", api+"/topics/t2/kick", `{}`)
	j = mustCall(t, 200, "GET", api+"/pop?topic=t3", ``)
	mustCall(t, 200, "POST", api+"/jobs/"+j["id"].(string)+"/touch", ``)
	mustCall(t, 200, "POST", api+"/jobs/"+j["id"].(string)+"/fail", `{"error":"no"}`)
	mustCall(t, 200, "POST", api+"/topics/t4/pause", `{"seconds":0.2}`)
	mustCall(t, 201, "POST", api+"/jobs", `{"topic":"ttr","body":"x","TTR":0.3}`)
	first := mustCall(t, 200, "GET", api+"/pop?topic=ttr", ``)
	again := mustCall(t, 200, "GET", bapi+"/pop?topic=ttr&timeout=3", ``) // the TTR runs out, the timers redeliver
	if again["id"] != first["id"] || again["attempt"] != 2.0 {
		t.Fatalf("TTR redelivery: %v after %v", again, first)
	}
	mustCall(t, 200, "POST", bapi+"/jobs/"+again["id"].(string)+"/ack", fmt.Sprintf(`{"attempt":%v}`, again["attempt"]))
	// A long poll on a, woken by a push on b.
	got := make(chan map[string]any, 1)
	go func() {
		_, j := call(t, "GET", api+"/pop?topic=wake&timeout=5", ``)
		got <- j
	}()
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	mustCall(t, 201, "POST", bapi+"/jobs", `{"topic":"wake","body":"across"}`)
	select {
	case j := <-got:
		if j["body"] != "across" || time.Since(start) > 2*time.Second {
			t.Fatalf("long poll: %v after %v", j, time.Since(start))
		}
		mustCall(t, 200, "POST", api+"/jobs/"+j["id"].(string)+"/ack", ``)
	case <-time.After(6 * time.Second):
		t.Fatal("the long poll was not woken")
	}
	// Every topic drained: every job in exactly one state, on the cluster.
	time.Sleep(300 * time.Millisecond) // the delayed and released jobs, the pause
	for i := range 8 {
		for {
			wait := 0.0
			if i == 3 {
				wait = 1.5 // its failed job waits out its 1 s backoff
			}
			code, j := call(t, "GET", fmt.Sprintf("%s/pop?topic=t%d&timeout=%v", bapi, i, wait), ``)
			if code == 204 {
				break
			}
			mustCall(t, 200, "POST", bapi+"/jobs/"+j["id"].(string)+"/ack", ``)
		}
	}
	if problems, err := a.Pool.Check(t.Context()); err != nil || len(problems) > 0 {
		t.Fatalf("check on the cluster: %v %v", problems, err)
	}
	st := mustCall(t, 200, "GET", api+"/stats", ``)
	if st["current_jobs_ready"] != 0.0 || st["current_jobs_reserved"] != 0.0 || st["current_jobs_delayed"] != 0.0 {
		t.Fatalf("stats: %v", st)
	}
}
