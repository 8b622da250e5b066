package broker_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
	"github.com/gmq/gmq/internal/redistest"
)

// Outcomes on a Redis Cluster (3 masters), two brokers: jobs of topics
// spread over the masters are completed with results through one broker
// while the other's events stream (one reader a bucket, each on its own
// master's slot) sees every completion, and a wait on the other broker is
// answered with the result. Every script keeps to one slot.
func TestOutcomesOnRedisCluster(t *testing.T) {
	c := redistest.StartCluster(t, 3, 0)
	conf := func(cfg *config.Config) { cfg.Buckets = 16 }
	a := brokertest.StartURL(t, c.URL(), conf)
	b := brokertest.StartURL(t, c.URL(), conf)
	api, bapi := a.URL+"/api/v1", b.URL+"/api/v1"
	var topics []string
	for i := range 6 {
		topic := fmt.Sprintf("out%d", i)
		topics = append(topics, topic)
		mustCall(t, 200, "PUT", api+"/topics/"+topic+"/config", `{"keep_completed": 600, "events": true, "job_history": 10}`)
	}

	// b's stream of every topic's completions.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", bapi+"/events?types=completed&topics="+strings.Join(topics, ","), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("events: %v %v", resp, err)
	}
	defer resp.Body.Close()
	completed := make(chan map[string]any, 100)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var ev map[string]any
				if json.Unmarshal([]byte(data), &ev) == nil && ev["type"] == "completed" {
					completed <- ev
				}
			}
		}
	}()

	// A wait on b for the first job, acked through a.
	waited := make(chan map[string]any, 1)
	mustCall(t, 201, "POST", api+"/jobs", `{"id":"w-0","topic":"out0","body":"x"}`)
	go func() {
		_, body := brokertest.Call(t, "GET", bapi+"/jobs/w-0/wait?timeout=30", ``)
		waited <- body
	}()
	for i, topic := range topics {
		if i > 0 {
			mustCall(t, 201, "POST", api+"/jobs", fmt.Sprintf(`{"id":"w-%d","topic":%q,"body":"x"}`, i, topic))
		}
		j := mustCall(t, 200, "GET", api+"/pop?topic="+topic, ``)
		mustCall(t, 200, "POST", fmt.Sprintf("%s/jobs/w-%d/ack", api, i), fmt.Sprintf(`{"attempt":%v,"result":{"n":%d}}`, j["attempt"], i))
	}
	seen := map[string]bool{}
	for range topics {
		select {
		case ev := <-completed:
			seen[ev["id"].(string)] = true
		case <-time.After(20 * time.Second):
			t.Fatalf("b's stream saw %v of %d completions within 20 s", seen, len(topics))
		}
	}
	select {
	case got := <-waited:
		if got["state"] != "completed" || fmt.Sprint(got["result"]) != "map[n:0]" {
			t.Fatalf("the wait on b: %v", got)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the wait on b was not answered")
	}
	if j := mustCall(t, 200, "GET", bapi+"/jobs/w-3", ``); len(j["history"].([]any)) != 3 {
		t.Fatalf("a history on the cluster: %v", j["history"])
	}
}
