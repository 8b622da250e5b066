package broker_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
)

// capsBroker is the one broker every row of TestDocumentedCaps drives: the
// defaults, but for the caps a row could not otherwise pass at one over
// (a thousand schedules, twenty thousand waiting consumers).
func capsBroker(t *testing.T) *brokertest.Broker {
	return brokertest.Fresh(t, func(c *config.Config) {
		c.MaxSchedules, c.MaxWaiting = 2, 1
	})
}

// capsCall is one HTTP call of a row, its answer's status and error text.
type capsCall struct {
	t   *testing.T
	api string
}

func (c capsCall) do(method, path, body string) (int, string, map[string]any) {
	c.t.Helper()
	code, out, err := brokertest.Do(method, c.api+path, body)
	if err != nil {
		c.t.Fatal(err)
	}
	return code, fmt.Sprint(out["error"]), out
}

// must is do that requires the status want.
func (c capsCall) must(want int, method, path, body string) map[string]any {
	c.t.Helper()
	code, msg, out := c.do(method, path, body)
	if code != want {
		c.t.Fatalf("%s %s %.200s: %d %s, want %d", method, path, body, code, msg, want)
	}
	return out
}

// pop reserves topic's next job: its id and attempt.
func (c capsCall) pop(topic string) (string, float64) {
	c.t.Helper()
	j := c.must(200, "GET", "/pop?topic="+topic+"&timeout=5", "")
	return j["id"].(string), j["attempt"].(float64)
}

// jobs is n jobs of topic, each with extra's fields, as a JSON array.
func jobs(n int, topic, extra string) string {
	one := `{"topic":"` + topic + `","body":"x"` + extra + `}`
	return "[" + strings.TrimSuffix(strings.Repeat(one+",", n), ",") + "]"
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

// TestDocumentedCaps drives every cap the docs give a status for one past
// its bound, and checks the status and message the docs promise: 413 for
// what is too large (a body, a result, a request, a count a request would
// put past its bound that waiting does not lower), 507 only for a full
// topic or store (a retry may pass once consumers take some), 400 for a
// request that breaks a rule of its shape, 429 for too many waiting.
// Each row says where its cap is documented; a row's topic is its own. A
// batch's 100,000 jobs in all is the one cap left out (filling it takes
// minutes): pool's TestBatchMembersCapped drives it under a lowered cap.
func TestDocumentedCaps(t *testing.T) {
	b := capsBroker(t)
	c := capsCall{t: t, api: b.URL + "/api/v1"}
	big := func(n int) string { return strings.Repeat("a", n) }
	for _, tc := range []struct {
		cap, doc string
		over     func(c capsCall) (int, string) // sets up, then makes the call one over the bound
		status   int
		says     string
	}{
		{"[server] max_request_body", "operations.md: over max_request_body: 413", func(c capsCall) (int, string) {
			code, msg, _ := c.do("POST", "/jobs/batch", `{"jobs":`+jobs(1, "cap-request", `,"pad":"`+big(8<<20)+`"`)+`}`)
			return code, msg
		}, 413, "too large"},
		{"[jobs] max_body", "operations.md: largest body in bytes (413 above)", func(c capsCall) (int, string) {
			code, msg, _ := c.do("POST", "/jobs", `{"topic":"cap-body","body":"`+big(64<<10+1)+`"}`)
			return code, msg
		}, 413, "too big"},
		{"max_item_size", "topics.md: max_item_size is HTTP 413", func(c capsCall) (int, string) {
			c.must(200, "PUT", "/topics/cap-item/config", `{"max_item_size": 3}`)
			code, msg, _ := c.do("POST", "/jobs", `{"topic":"cap-item","body":"abcd"}`)
			return code, msg
		}, 413, "max_item_size"},
		{"max_items", "topics.md: a push to a full topic: 507 Insufficient Storage", func(c capsCall) (int, string) {
			c.must(200, "PUT", "/topics/cap-items/config", `{"max_items": 1}`)
			c.must(201, "POST", "/jobs", `{"topic":"cap-items","body":"x"}`)
			code, msg, _ := c.do("POST", "/jobs", `{"topic":"cap-items","body":"x"}`)
			return code, msg
		}, 507, "topic is full"},
		{"max_size", "topics.md: a push to a full topic: 507 Insufficient Storage", func(c capsCall) (int, string) {
			c.must(200, "PUT", "/topics/cap-size/config", `{"max_size": 4}`)
			c.must(201, "POST", "/jobs", `{"topic":"cap-size","body":"abc"}`)
			code, msg, _ := c.do("POST", "/jobs", `{"topic":"cap-size","body":"abc"}`)
			return code, msg
		}, 507, "topic is full"},
		{"max_result", "outcomes.md: a larger one is refused (413, too_big)", func(c capsCall) (int, string) {
			c.must(201, "POST", "/jobs", `{"topic":"cap-result","body":"x"}`)
			id, attempt := c.pop("cap-result")
			code, msg, _ := c.do("POST", "/jobs/"+id+"/ack", fmt.Sprintf(`{"attempt":%v,"result":%s}`, attempt, quote(big(16<<10))))
			return code, msg
		}, 413, "max_result is 16384"},
		{"max_result of progress", "outcomes.md: progress is at most the topic's max_result bytes", func(c capsCall) (int, string) {
			c.must(201, "POST", "/jobs", `{"topic":"cap-progress","body":"x"}`)
			id, attempt := c.pop("cap-progress")
			code, msg, _ := c.do("POST", "/jobs/"+id+"/progress", fmt.Sprintf(`{"attempt":%v,"progress":%s}`, attempt, quote(big(16<<10))))
			return code, msg
		}, 413, "max_result is 16384"},
		{"[jobs] max_schedules", "operations.md: one more PUT answers 507", func(c capsCall) (int, string) {
			for _, name := range []string{"cap-1", "cap-2"} {
				c.must(200, "PUT", "/schedules/"+name, `{"cron":"0 9 * * *","job":{"topic":"cap-sched","body":"x"}}`)
			}
			code, msg, _ := c.do("PUT", "/schedules/cap-3", `{"cron":"0 9 * * *","job":{"topic":"cap-sched","body":"x"}}`)
			return code, msg
		}, 507, "max_schedules"},
		{"[jobs] max_batch", "operations.md: most jobs in one batch push", func(c capsCall) (int, string) {
			code, msg, _ := c.do("POST", "/jobs/batch", `{"jobs":`+jobs(1001, "cap-batch", "")+`}`)
			return code, msg
		}, 400, "a batch holds 1 to 1000 jobs, got 1001"},
		{"[jobs] max_batch of a pop", "operations.md: most jobs in one batch pop", func(c capsCall) (int, string) {
			code, msg, _ := c.do("POST", "/pop", `{"topics":["cap-bpop"],"count":1001}`)
			return code, msg
		}, 400, "count 1001 is over the limit of 1000 jobs a request ([jobs] max_batch)"},
		{"[jobs] max_batch of an ack", "operations.md: most jobs in one batch ack", func(c capsCall) (int, string) {
			acks := make([]string, 1001)
			for i := range acks {
				acks[i] = fmt.Sprintf(`{"id":"cap-%d","attempt":1}`, i)
			}
			code, msg, _ := c.do("POST", "/ack", `{"jobs":[`+strings.Join(acks, ",")+`]}`)
			return code, msg
		}, 400, "an ack holds 1 to 1000 jobs, got 1001"},
		{"dependents of a job", "workflows.md: at most 1,000 jobs waiting for it (413 past it)", func(c capsCall) (int, string) {
			c.must(201, "POST", "/jobs", `{"id":"cap-dep","topic":"cap-deps","body":"x"}`)
			for range 2 {
				c.must(201, "POST", "/jobs/batch", `{"jobs":`+jobs(500, "cap-deps", `,"after":["cap-dep"]`)+`}`)
			}
			code, msg, _ := c.do("POST", "/jobs", `{"topic":"cap-deps","body":"x","after":["cap-dep"]}`)
			return code, msg
		}, 413, "as many jobs waiting for it as it may hold (1000)"},
		{"after", "workflows.md: at most 100 jobs in after", func(c capsCall) (int, string) {
			after := make([]string, 101)
			for i := range after {
				after[i] = fmt.Sprintf(`"a%d"`, i)
			}
			code, msg, _ := c.do("POST", "/jobs", `{"topic":"cap-after","body":"x","after":[`+strings.Join(after, ",")+`]}`)
			return code, msg
		}, 400, "after: want an array of 1 to 100 job ids"},
		{"follow-ups of an ack", "workflows.md: more than 100 (an alias's copies counted)", func(c capsCall) (int, string) {
			c.must(201, "POST", "/jobs", `{"topic":"cap-follow","body":"x"}`)
			id, attempt := c.pop("cap-follow")
			code, msg, _ := c.do("POST", "/jobs/"+id+"/ack", fmt.Sprintf(`{"attempt":%v,"push":%s}`, attempt, jobs(101, "cap-follow-next", "")))
			return code, msg
		}, 400, "push: want an array of 1 to 100 jobs"},
		{"a follow-up with its result over max_body", "workflows.md: refused with the ack (413)", func(c capsCall) (int, string) {
			c.must(200, "PUT", "/topics/cap-with/config", `{"max_result": 1048576}`)
			c.must(201, "POST", "/jobs", `{"topic":"cap-with","body":"x"}`)
			id, attempt := c.pop("cap-with")
			code, msg, _ := c.do("POST", "/jobs/"+id+"/ack", fmt.Sprintf(`{"attempt":%v,"result":%s,"push":[{"topic":"cap-with-next","body":"x","with_result":true}]}`, attempt, quote(big(64<<10))))
			return code, msg
		}, 413, "push: job 0"},
		{"jobs of a batch's create", "workflows.md: at most 1,000 jobs a request", func(c capsCall) (int, string) {
			code, msg, _ := c.do("POST", "/batches", `{"jobs":`+jobs(1001, "cap-bcreate", "")+`}`)
			return code, msg
		}, 400, "jobs: want an array of 0 to 1000 jobs"},
		{"jobs of a batch's add", "openapi.yaml: addToBatch maxItems 1000", func(c capsCall) (int, string) {
			id := c.must(201, "POST", "/batches", `{"open":true,"jobs":[]}`)["id"].(string)
			code, msg, _ := c.do("POST", "/batches/"+id+"/jobs", `{"jobs":`+jobs(1001, "cap-badd", "")+`}`)
			return code, msg
		}, 400, "jobs: want an array of 0 to 1000 jobs"},
		{"a batch's meta", "workflows.md: meta is at most 16 KiB", func(c capsCall) (int, string) {
			code, msg, _ := c.do("POST", "/batches", `{"jobs":[],"meta":`+quote(big(16<<10))+`}`)
			return code, msg
		}, 413, "at most 16384"},
		{"a batches page", "workflows.md: an offset plus its page's limit past 5,000 is refused (400)", func(c capsCall) (int, string) {
			code, msg, _ := c.do("GET", "/batches?offset=4001&limit=1000", "")
			return code, msg
		}, 400, "5000"},
		{"max_fanout", "topics.md: a push that would make one more is refused (400)", func(c capsCall) (int, string) {
			c.must(200, "PUT", "/topics/cap-fan/config", `{"max_fanout": 1}`)
			c.must(201, "POST", "/jobs", `{"topic":"cap-fan+a","body":"x"}`)
			code, msg, _ := c.do("POST", "/jobs", `{"topic":"cap-fan+b","body":"x"}`)
			return code, msg
		}, 400, "max_fanout"},
		{"[jobs] max_waiting", "operations.md: one more gets HTTP 429", func(c capsCall) (int, string) {
			var wg sync.WaitGroup
			defer wg.Wait()
			wg.Add(1)
			go func() { // the one waiting consumer allowed, until a job comes
				defer wg.Done()
				brokertest.Do("GET", c.api+"/pop?topic=cap-wait&timeout=30", "")
			}()
			defer c.must(201, "POST", "/jobs", `{"topic":"cap-wait","body":"x"}`)
			brokertest.Eventually(c.t, "the first consumer waiting", func() bool {
				return c.must(200, "GET", "/stats", "")["current_waiting"] == 1.0
			})
			code, msg, _ := c.do("GET", "/pop?topic=cap-wait-too&timeout=1", "")
			return code, msg
		}, 429, "waiting"},
	} {
		t.Run(tc.cap, func(t *testing.T) {
			c.t = t
			start := time.Now()
			code, msg := tc.over(c)
			if code != tc.status || !strings.Contains(msg, tc.says) {
				t.Errorf("one over %s (%s): %d %q, want %d saying %q", tc.cap, tc.doc, code, msg, tc.status, tc.says)
			}
			t.Logf("%s in %v", tc.cap, time.Since(start).Round(time.Millisecond))
		})
	}
}
