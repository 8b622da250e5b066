package web_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
)

// Every route that waits for a job, waiting well past request_timeout: the
// wait is the client's to choose, and request_timeout bounds only the work
// around it. Before, the request deadline was installed on every route as
// well as on the waiting ones, so every long poll of request_timeout or
// more answered 503 "context deadline exceeded" (issue 20). The request
// timeout here is not the default, and the waits are ten times it (a late
// job comes at twice it: the rest is margin for a loaded machine).
func TestLongPollsOutlastRequestTimeout(t *testing.T) {
	const requestTimeout, wait = 500 * time.Millisecond, 5 * time.Second
	b := brokertest.Fresh(t, func(c *config.Config) { c.RequestTimeout = requestTimeout })
	api := b.URL + "/api/v1"
	secs := wait.Seconds()
	// reserved pushes and pops a job of topic, for the ack routes.
	reserved := func(t *testing.T, topic string) (id string, attempt float64) {
		mustCall(t, 201, "POST", api+"/jobs", fmt.Sprintf(`{"topic":%q,"body":"x"}`, topic))
		j := mustCall(t, 200, "POST", api+"/pop", fmt.Sprintf(`{"topics":[%q],"timeout":1}`, topic))
		return j["id"].(string), j["attempt"].(float64)
	}
	routes := []struct {
		name string
		// request answers the route's request, waiting on topic wait.
		request func(t *testing.T, topic string) (method, url, body string)
		empty   int // the status when no job comes
		many    bool
	}{
		{"GET pop", func(t *testing.T, topic string) (string, string, string) {
			return "GET", fmt.Sprintf("%s/pop?topic=%s&timeout=%g", api, topic, secs), ""
		}, 204, false},
		{"POST pop", func(t *testing.T, topic string) (string, string, string) {
			return "POST", api + "/pop", fmt.Sprintf(`{"topics":[%q],"timeout":%g}`, topic, secs)
		}, 204, false},
		{"batch pop", func(t *testing.T, topic string) (string, string, string) {
			return "POST", api + "/pop", fmt.Sprintf(`{"topics":[%q],"count":3,"timeout":%g}`, topic, secs)
		}, 204, true},
		{"ack with next", func(t *testing.T, topic string) (string, string, string) {
			id, attempt := reserved(t, topic+"-held")
			return "POST", api + "/jobs/" + id + "/ack", fmt.Sprintf(`{"attempt":%g,"next":{"topics":[%q],"timeout":%g}}`, attempt, topic, secs)
		}, 204, false},
		{"batch ack with next", func(t *testing.T, topic string) (string, string, string) {
			id, attempt := reserved(t, topic+"-held")
			return "POST", api + "/ack", fmt.Sprintf(`{"jobs":[{"id":%q,"attempt":%g}],"next":{"topics":[%q],"count":2,"timeout":%g}}`, id, attempt, topic, secs)
		}, 200, true},
	}
	// At the defaults too: the README's examples wait 5 s, request_timeout's
	// default; this waits past it.
	t.Run("past the default request_timeout", func(t *testing.T) {
		t.Parallel()
		d := brokertest.Start(t, brokertest.Redis(), nil)
		if def := config.Default().RequestTimeout; def >= 6*time.Second {
			t.Fatalf("the default request_timeout %v is no longer under this test's wait", def)
		}
		start := time.Now()
		mustCall(t, 204, "GET", d.URL+"/api/v1/pop?topic=default-empty&timeout=6", "")
		if took := time.Since(start); took < 6*time.Second-50*time.Millisecond {
			t.Errorf("answered after %v, want the 6 s wait", took)
		}
	})
	for i, r := range routes {
		t.Run(r.name+" gets nothing", func(t *testing.T) {
			t.Parallel()
			topic := fmt.Sprintf("empty%d", i)
			method, url, body := r.request(t, topic)
			start := time.Now()
			out := mustCall(t, r.empty, method, url, body)
			// Not cut short; the upper bound only says it did answer,
			// generous for a loaded machine.
			if took := time.Since(start); took < wait-50*time.Millisecond || took > wait+30*time.Second {
				t.Errorf("answered after %v, want the %v wait", took, wait)
			}
			if jobs, _ := out["jobs"].([]any); r.empty == 200 && (out["jobs"] == nil || len(jobs) != 0) {
				t.Errorf("answer %v, want no jobs", out)
			}
		})
		t.Run(r.name+" gets a late job", func(t *testing.T) {
			t.Parallel()
			topic := fmt.Sprintf("late%d", i)
			method, url, body := r.request(t, topic)
			pushed := make(chan struct{})
			go func() {
				defer close(pushed)
				time.Sleep(2 * requestTimeout) // past the request timeout, within the wait
				if code, out, err := brokertest.Do("POST", api+"/jobs", fmt.Sprintf(`{"topic":%q,"body":"late"}`, topic)); code != 201 {
					t.Errorf("push: %d %v %v", code, out, err)
				}
			}()
			out := mustCall(t, 200, method, url, body)
			<-pushed
			job := out
			if r.many {
				jobs, _ := out["jobs"].([]any)
				if len(jobs) != 1 {
					t.Fatalf("answer %v, want the late job", out)
				}
				job = jobs[0].(map[string]any)
			}
			if job["body"] != "late" {
				t.Errorf("answer %v, want the late job", out)
			}
		})
	}
}
