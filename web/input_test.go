package web_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
)

// Honest answers to bad input (issue 20): absurd list windows are a 400 or
// an empty page, never a 500 from the store's arithmetic.
func TestListWindowsOverHTTP(t *testing.T) {
	b := broker(t)
	api := b.URL + "/api/v1"
	for range 3 {
		mustCall(t, 201, "POST", api+"/jobs", `{"topic":"w","body":"x"}`)
	}
	empty := []string{
		"/topics/w/jobs?offset=100000000000000000", // 1e17: the sum offset+limit was a float Redis refused
		"/topics/w/jobs?offset=9223372036854775807&limit=500",
		"/topics/w/jobs?offset=3",
		"/topics/w/dead?offset=100000000000000000",
		"/topics/w/dead?offset=9223372036854775807&limit=1000",
		"/topics/w/jobs?state=delayed&offset=99999999999999999",
	}
	for _, path := range empty {
		out := mustCall(t, 200, "GET", api+path, ``)
		if jobs, _ := out["jobs"].([]any); len(jobs) != 0 {
			t.Errorf("%s: %v, want an empty page", path, out)
		}
	}
	if out := mustCall(t, 200, "GET", api+"/topics/w/jobs?offset=0&limit=100000000", ``); len(out["jobs"].([]any)) != 3 || out["total"] != 3.0 {
		t.Errorf("a huge limit, cut to the cap: %v", out)
	}
	if out := mustCall(t, 200, "GET", api+"/topics/w/jobs?offset=2&limit=5", ``); len(out["jobs"].([]any)) != 1 {
		t.Errorf("the last page: %v", out)
	}
	bad := map[string]string{
		"/topics/w/jobs?offset=1e17":                      "offset must be a whole number",
		"/topics/w/jobs?offset=-1":                        "offset must be a whole number",
		"/topics/w/jobs?offset=99999999999999999999":      "offset must be a whole number",
		"/topics/w/jobs?limit=0":                          "limit must be a whole number, 1 or more",
		"/topics/w/jobs?limit=-5":                         "limit must be a whole number",
		"/topics/w/dead?offset=1e17":                      "offset must be a whole number",
		"/topics/w/dead?limit=" + strings.Repeat("9", 30): "limit must be a whole number",
	}
	for path, says := range bad {
		code, out := call(t, "GET", api+path, ``)
		if msg, _ := out["error"].(string); code != 400 || !strings.Contains(msg, says) {
			t.Errorf("%s: %d %v, want 400 saying %q", path, code, out, says)
		}
	}
}

// Every JSON body of the API refuses a field it does not know, naming it
// (issue 20: {"dealy": 5} was a 201 and the job ran at once), and still
// takes every field gmq's clients send, in any case.
func TestUnknownFieldsRefused(t *testing.T) {
	b := broker(t)
	api := b.URL + "/api/v1"
	mustCall(t, 201, "POST", api+"/jobs", `{"id":"k-1","topic":"k","body":"x"}`)
	tests := []struct{ name, path, body, says string }{
		{"push", "/jobs", `{"topic":"k","body":"x","dealy":5}`, `unknown field "dealy"`},
		{"push, two unknown", "/jobs", `{"topic":"k","body":"x","ttl":5,"Dealy":5}`, `unknown fields "dealy", "ttl"`},
		{"push's retry", "/jobs", `{"topic":"k","body":"x","retry":{"max_attempt":3}}`, `retry: bad request: unknown field "max_attempt"`},
		{"batch push, the object", "/jobs/batch", `{"jobs":[{"topic":"k","body":"x"}],"atomic":true}`, `unknown field "atomic"`},
		{"batch push, a job", "/jobs/batch", `{"jobs":[{"topic":"k","body":"x"},{"topic":"k","body":"x","prio":1}]}`, `job 1: bad request: unknown field "prio"`},
		{"pop", "/pop", `{"topics":["k"],"wait":5}`, `unknown field "wait"`},
		{"ack", "/jobs/k-1/ack", `{"attempt":1,"nxt":{"topics":["k"]}}`, `unknown field "nxt"`},
		{"ack's next", "/jobs/k-1/ack", `{"attempt":1,"next":{"topics":["k"],"timout":5}}`, `next: bad request: unknown field "timout"`},
		{"release", "/jobs/k-1/release", `{"attempt":1,"dealy":30}`, `unknown field "dealy"`},
		{"bury", "/jobs/k-1/bury", `{"attempts":1}`, `unknown field "attempts"`},
		{"touch", "/jobs/k-1/touch", `{"ttr":60}`, `unknown field "ttr"`},
		{"fail", "/jobs/k-1/fail", `{"attempt":1,"reason":"x"}`, `unknown field "reason"`},
		// Another action's field is refused too: an ack does not release.
		{"ack with a delay", "/jobs/k-1/ack", `{"attempt":1,"delay":5}`, `unknown field "delay"`},
		{"touch with a priority", "/jobs/k-1/touch", `{"priority":5}`, `unknown field "priority"`},
		{"bury with an error", "/jobs/k-1/bury", `{"error":"x"}`, `unknown field "error"`},
		{"fail with next", "/jobs/k-1/fail", `{"next":{"topics":["k"]}}`, `unknown field "next"`},
		{"batch ack, the object", "/ack", `{"jobs":[{"id":"k-1"}],"pop":{"topics":["k"]}}`, `unknown field "pop"`},
		{"batch ack, a job", "/ack", `{"jobs":[{"id":"k-1","attempt":1,"topic":"k"}]}`, `job 0: bad request: unknown field "topic"`},
		{"batch fail, a job", "/fail", `{"jobs":[{"id":"k-1","err":"x"}]}`, `unknown field "err"`},
		{"dead retry", "/topics/k/dead/retry", `{"id":["k-1"]}`, `unknown field "id"`},
		{"purge", "/topics/k/purge", `{"states":["ready"],"forced":true}`, `unknown field "forced"`},
	}
	for _, tt := range tests {
		code, out := call(t, "POST", api+tt.path, tt.body)
		if msg, _ := out["error"].(string); code != 400 || !strings.Contains(msg, tt.says) {
			t.Errorf("%s: %d %v, want 400 saying %q", tt.name, code, out, tt.says)
		}
	}
	// Nothing was stored, and k-1 was never popped.
	if st := mustCall(t, 200, "GET", api+"/stats", ``); st["total_jobs"] != 1.0 || st["total_reserves"] != 0.0 {
		t.Fatalf("refused requests changed the store: %v", st)
	}
	// What the clients send (client/, clients/python, clients/php, README), in any case.
	mustCall(t, 201, "POST", api+"/jobs", `{"id":"k-2","Topic":"k","BODY":"x","delay":"0","TTR":"30","priority":5,"expires_in":60,"retry":{"max_attempts":2,"backoff":"fixed","base":1,"max":2,"jitter":false},"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}`)
	mustCall(t, 201, "POST", api+"/jobs/batch", `{"jobs":[{"topic":"k","body":"y","ttr":5,"pri":7,"expires_at":4102444800}]}`)
	j := mustCall(t, 200, "POST", api+"/pop", `{"topics":["k"],"topic":"k","timeout":0,"count":1}`)
	id := j["jobs"].([]any)[0].(map[string]any)["id"].(string)
	mustCall(t, 200, "POST", api+"/jobs/"+id+"/touch", `{"attempt":1}`)
	mustCall(t, 200, "POST", api+"/jobs/"+id+"/release", `{"attempt":1,"delay":0,"priority":5}`)
	mustCall(t, 200, "POST", api+"/pop", `{"topics":["k"]}`)
	mustCall(t, 200, "POST", api+"/jobs/"+id+"/bury", `{"attempt":2,"pri":4}`)
	mustCall(t, 200, "POST", api+"/jobs/"+id+"/kick", ``)
	mustCall(t, 200, "GET", api+"/pop?topic=k", ``)
	mustCall(t, 200, "POST", api+"/jobs/"+id+"/ack", `{"attempt":3,"next":{"topics":["k"],"count":1,"timeout":0}}`)
	mustCall(t, 200, "POST", api+"/ack", `{"jobs":[{"id":"k-1","attempt":0}]}`)
}

// A huge long-poll timeout waits max_pop_timeout and answers 204, never a
// deadline error from an overflowed wait (issue 20 checked every front
// end's; HTTP's held: this keeps it so). Over the JSON body's range: 400.
func TestHugePopTimeouts(t *testing.T) {
	b := brokertest.Fresh(t, func(c *config.Config) { c.MaxPopTimeout = 300 * time.Millisecond })
	api := b.URL + "/api/v1"
	for _, req := range []struct{ method, path, body string }{
		{"GET", "/pop?topic=h&timeout=1e300", ``},
		{"GET", "/pop?topic=h&timeout=9223372036854775807", ``},
		{"POST", "/pop", `{"topics":["h"],"timeout":4294967295}`},
		{"POST", "/pop", `{"topics":["h"],"timeout":4294967295,"count":2}`},
	} {
		start := time.Now()
		// max_pop_timeout is 300 ms: 30 s is the margin for a loaded machine,
		// far below the huge timeout asked for.
		if code, out := call(t, req.method, api+req.path, req.body); code != 204 || time.Since(start) > 30*time.Second {
			t.Errorf("%s %s %s: %d %v after %v, want 204 after max_pop_timeout", req.method, req.path, req.body, code, out, time.Since(start))
		}
	}
	code, out := call(t, "POST", api+"/pop", `{"topics":["h"],"timeout":1e300}`)
	if msg, _ := out["error"].(string); code != 400 || !strings.Contains(msg, "timeout must be from 0 to 4294967295 seconds") {
		t.Errorf("a timeout over the range: %d %v", code, out)
	}
}

// Topic settings in seconds are bounded as a job's own durations are, 0 to
// 2^32-1 (issue 20: backoff_base = 2^63-1 was taken and the failed job then
// showed no due time); at the bound, a delayed job shows when it is due and
// a dead one when it died.
func TestSecondsSettingsBounded(t *testing.T) {
	b := broker(t)
	api := b.URL + "/api/v1"
	for _, name := range []string{"max_age", "max_queue_age", "backoff_base", "backoff_max", "dead_retention"} {
		for _, v := range []string{"9223372036854775807", "4294967296", `"4294967296"`} {
			code, out := call(t, "PUT", api+"/topics/s/config", `{"`+name+`":`+v+`}`)
			if msg, _ := out["error"].(string); code != 400 || !strings.Contains(msg, "seconds from 0 to 4294967295") {
				t.Errorf("%s = %s: %d %v, want 400", name, v, code, out)
			}
		}
	}
	mustCall(t, 200, "PUT", api+"/topics/s/config", `{"backoff_base":4294967295,"backoff_max":4294967295,"dead_retention":4294967295,"max_age":4294967295}`)
	mustCall(t, 201, "POST", api+"/jobs", `{"id":"s-1","topic":"s","body":"x"}`)
	mustCall(t, 201, "POST", api+"/jobs", `{"id":"s-2","topic":"s","body":"x","retry":{"max_attempts":1}}`)
	mustCall(t, 200, "POST", api+"/pop", `{"topics":["s"],"count":2}`)
	delayed := mustCall(t, 200, "POST", api+"/jobs/s-1/fail", `{"error":"x"}`)
	due, err := time.Parse(time.RFC3339Nano, fmt.Sprint(delayed["due"]))
	if delayed["state"] != "delayed" || err != nil || time.Until(due) < 4294967000*time.Second {
		t.Errorf("a job failed under the longest backoff: %v, want it delayed and due in 2^32-1 s", delayed)
	}
	dead := mustCall(t, 200, "POST", api+"/jobs/s-2/fail", `{"error":"x"}`)
	if _, err := time.Parse(time.RFC3339Nano, fmt.Sprint(dead["dead_at"])); dead["state"] != "dead" || err != nil {
		t.Errorf("a dead job: %v, want its dead_at", dead)
	}
}

// Errors say what the client asked for in its own terms (issue 20: an ack
// of order-42 was answered "delete job 40: stale delivery", the store's
// verb and number), and never hold a newline (errors.Join's).
func TestErrorsInTheClientsTerms(t *testing.T) {
	b := broker(t)
	api := b.URL + "/api/v1"
	internal := mustCall(t, 201, "POST", api+"/jobs", `{"id":"order-42","topic":"e","body":"x"}`)["internal_id"]
	ready := mustCall(t, 201, "POST", api+"/jobs", `{"id":"ready-1","topic":"r","body":"x"}`)["internal_id"]
	mustCall(t, 200, "POST", api+"/pop", `{"topics":["e"]}`)
	mustCall(t, 200, "POST", api+"/jobs/order-42/release", `{"attempt":1}`)
	mustCall(t, 200, "POST", api+"/pop", `{"topics":["e"]}`) // attempt 2
	mustCall(t, 201, "POST", api+"/jobs", `{"id":"later-1","topic":"r","body":"x","delay":3600}`)
	const stale = "stale delivery: attempt 1, the job is on attempt 2"
	// An ack of a delivery that never was (issue 49 said "stale delivery:
	// attempt 1, the job is on attempt 0").
	const never = "the job is still %s and was never delivered (no attempt 1 to act on)"
	tests := []struct {
		method, path, body string
		code               int
		want               string // the whole message, or of each failed item
	}{
		{"POST", "/jobs/order-42/ack", `{"attempt":1}`, 409, `ack "order-42": ` + stale},
		{"POST", "/jobs/order-42/ack", `{"attempt":1,"next":{"topics":["e"]}}`, 409, `ack "order-42": ` + stale},
		{"POST", "/jobs/order-42/touch", `{"attempt":1}`, 409, `touch "order-42": ` + stale},
		{"POST", "/jobs/order-42/release", `{"attempt":1}`, 409, `release "order-42": ` + stale},
		{"POST", "/jobs/order-42/bury", `{"attempt":1}`, 409, `bury "order-42": ` + stale},
		{"POST", "/jobs/order-42/fail", `{"attempt":1}`, 409, `fail "order-42": ` + stale},
		{"POST", "/jobs/order-42/kick", ``, 409, `kick "order-42": the job is reserved`},
		{"POST", "/jobs/ready-1/touch", ``, 409, `touch "ready-1": the job is ready`},
		{"POST", "/jobs/ready-1/bury", ``, 409, `bury "ready-1": the job is ready`},
		{"POST", "/jobs/ready-1/ack", `{"attempt":1}`, 409, `ack "ready-1": ` + fmt.Sprintf(never, "ready")},
		{"POST", "/jobs/later-1/ack", `{"attempt":1}`, 409, `ack "later-1": ` + fmt.Sprintf(never, "delayed")},
		{"POST", "/jobs/ready-1/fail", `{"attempt":1}`, 409, `fail "ready-1": ` + fmt.Sprintf(never, "ready")},
		{"POST", "/ack", `{"jobs":[{"id":"ready-1","attempt":1}]}`, 200, fmt.Sprintf(never, "ready")},
		{"GET", "/jobs/999999", ``, 404, `job "999999": not found`},
		{"POST", "/jobs/999999/ack", ``, 404, `ack "999999": not found`},
		{"DELETE", "/jobs/999999", ``, 404, `delete "999999": not found`},
		{"POST", "/jobs/nobody-1/touch", ``, 404, `touch "nobody-1": not found`},
		{"POST", "/ack", `{"jobs":[{"id":"order-42","attempt":1}]}`, 200, stale},
		{"POST", "/ack", `{"jobs":[{"id":"999999"}],"next":{"topics":["e"]}}`, 200, "not found"},
		{"POST", "/fail", `{"jobs":[{"id":"order-42","attempt":1}]}`, 200, stale},
		{"GET", "/pop", ``, 400, "bad request: give at least one ?topic="},
		{"GET", "/pop?topic=e&timeout=x", ``, 400, `bad request: timeout must be a number of seconds, got "x"`},
		{"POST", "/jobs/order-42/ack?attempt=x", ``, 400, "bad request: attempt must be a whole number"},
		{"GET", "/topics/nothing", ``, 404, `not found`},
	}
	for _, tt := range tests {
		code, out := call(t, tt.method, api+tt.path, tt.body)
		var msgs []string
		if failed, ok := out["failed"].([]any); ok {
			for _, f := range failed {
				msgs = append(msgs, fmt.Sprint(f.(map[string]any)["error"]))
			}
		} else {
			msgs = append(msgs, fmt.Sprint(out["error"]))
		}
		for _, msg := range msgs {
			if code != tt.code || msg != tt.want && !(tt.code == 404 && tt.path == "/topics/nothing" && strings.HasSuffix(msg, tt.want)) {
				t.Errorf("%s %s %s: %d %q, want %d %q", tt.method, tt.path, tt.body, code, msg, tt.code, tt.want)
			}
			if strings.Contains(msg, "\n") || strings.Contains(msg, fmt.Sprintf("%.0f", internal)) || strings.Contains(msg, fmt.Sprintf("%.0f", ready)) {
				t.Errorf("%s %s: %q holds a newline or a store number", tt.method, tt.path, msg)
			}
		}
		if len(msgs) == 0 {
			t.Errorf("%s %s: %v, no failure", tt.method, tt.path, out)
		}
	}
}
