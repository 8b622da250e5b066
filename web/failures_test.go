package web_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
)

// Failures over HTTP: fail with backoff, stale fails refused, dead past
// max_attempts, the dead list, retry, delete; purge by state.
func TestFailuresOverHTTP(t *testing.T) {
	b := broker(t)
	api := b.URL + "/api/v1"
	mustCall(t, 200, "PUT", api+"/topics/mail/config", `{"max_attempts": 2, "backoff": "fixed", "backoff_base": 30}`)
	mustCall(t, 201, "POST", api+"/jobs", `{"id":"m-1","topic":"mail","body":"hello"}`)
	j := mustCall(t, 200, "GET", api+"/pop?topic=mail", ``)
	failed := mustCall(t, 200, "POST", api+"/jobs/m-1/fail", fmt.Sprintf(`{"attempt":%v,"error":"smtp 550"}`, j["attempt"]))
	if failed["state"] != "delayed" || failed["failures"] != 1.0 || failed["last_error"] != "smtp 550" {
		t.Fatalf("first failure: %v", failed)
	}
	due, _ := time.Parse(time.RFC3339Nano, failed["due"].(string))
	if d := time.Until(due); d < 29*time.Second || d > 30*time.Second {
		t.Fatalf("fixed backoff 30 s: due in %v", d)
	}
	mustCall(t, 409, "POST", api+"/jobs/m-1/fail", fmt.Sprintf(`{"attempt":%v,"error":"again"}`, j["attempt"]))
	mustCall(t, 200, "POST", api+"/jobs/m-1/kick", ``)
	j = mustCall(t, 200, "GET", api+"/pop?topic=mail", ``)
	out := mustCall(t, 200, "POST", api+"/fail", fmt.Sprintf(`{"jobs":[{"id":"m-1","attempt":%v,"error":"smtp 550 again"},{"id":"nobody","error":"x"}]}`, j["attempt"]))
	jobs, _ := out["jobs"].([]any)
	nope, _ := out["failed"].([]any)
	if len(jobs) != 1 || jobs[0].(map[string]any)["state"] != "dead" || len(nope) != 1 || nope[0].(map[string]any)["status"] != 404.0 {
		t.Fatalf("batch fail: %v", out)
	}
	dead := mustCall(t, 200, "GET", api+"/topics/mail/dead", ``)
	list, _ := dead["jobs"].([]any)
	if dead["total"] != 1.0 || len(list) != 1 || list[0].(map[string]any)["last_error"] != "smtp 550 again" || list[0].(map[string]any)["body_preview"] != "hello" {
		t.Fatalf("dead list: %v", dead)
	}
	if st := mustCall(t, 200, "GET", api+"/topics/mail", ``); st["dead"] != 1.0 || st["total_failures"] != 2.0 {
		t.Fatalf("topic stats: %v", st)
	}
	if out := mustCall(t, 200, "POST", api+"/topics/mail/dead/retry", `{"ids":["m-1"]}`); out["retried"] != 1.0 {
		t.Fatalf("retry: %v", out)
	}
	if j := mustCall(t, 200, "GET", api+"/pop?topic=mail", ``); j["failures"] != 0.0 {
		t.Fatalf("a retried job: %v", j)
	}

	// A backoff is never cut short: the job comes back no earlier than due.
	mustCall(t, 201, "POST", api+"/jobs", `{"id":"soon","topic":"wait","body":"x","retry":{"backoff":"fixed","base":0.3}}`)
	j = mustCall(t, 200, "GET", api+"/pop?topic=wait", ``)
	failed = mustCall(t, 200, "POST", api+"/jobs/soon/fail", `{"error":"later"}`)
	due, _ = time.Parse(time.RFC3339Nano, failed["due"].(string))
	back := mustCall(t, 200, "GET", api+"/pop?topic=wait&timeout=3", ``)
	if now := time.Now(); back["id"] != "soon" || now.Before(due) || now.After(due.Add(300*time.Millisecond)) {
		t.Fatalf("after a 0.3 s backoff the job came back at %v, due %v: %v", now, due, back)
	}

	// A job's own policy: one attempt, then dead; delete the dead set.
	mustCall(t, 201, "POST", api+"/jobs", `{"topic":"once","body":"x","retry":{"max_attempts":1}}`)
	j = mustCall(t, 200, "GET", api+"/pop?topic=once", ``)
	mustCall(t, 200, "POST", api+"/jobs/"+j["id"].(string)+"/fail", `{"error":"no"}`)
	if out := mustCall(t, 200, "DELETE", api+"/topics/once/dead", ``); out["deleted"] != 1.0 {
		t.Fatalf("delete the dead set: %v", out)
	}

	// Purge by state; reserved only with force.
	mustCall(t, 201, "POST", api+"/jobs/batch", `{"jobs":[{"topic":"p","body":"1"},{"topic":"p","body":"2","delay":60},{"topic":"p","body":"3"}]}`)
	mustCall(t, 200, "GET", api+"/pop?topic=p", ``)
	mustCall(t, 400, "POST", api+"/topics/p/purge", `{"states":["reserved"]}`)
	if out := mustCall(t, 200, "POST", api+"/topics/p/purge", `{"states":["ready","delayed"]}`); out["purged"] != 2.0 {
		t.Fatalf("purge: %v", out)
	}
	if out := mustCall(t, 200, "POST", api+"/topics/p/purge", `{"states":["reserved"],"force":true}`); out["purged"] != 1.0 {
		t.Fatalf("forced purge: %v", out)
	}
	for _, bad := range []struct{ body, says string }{
		{`{"topic":"t","body":"x","retry":{"tries":3}}`, "unknown field"},
		{`{"topic":"t","body":"x","retry":{"backoff":"random"}}`, "retry backoff"},
		{`{"topic":"t","body":"x","retry":{"max_attempts":-1}}`, "max_attempts"},
		{`{"topic":"t","body":"x","retry":5}`, "retry"},
	} {
		code, out := call(t, "POST", api+"/jobs", bad.body)
		if msg, _ := out["error"].(string); code != 400 || !strings.Contains(msg, bad.says) {
			t.Errorf("%s: %d %q, want 400 with %q", bad.body, code, msg, bad.says)
		}
	}
	mustCall(t, 400, "POST", api+"/topics/p/purge", `{"states":["gone"]}`)
	mustCall(t, 400, "PUT", api+"/topics/p/config", `{"backoff":"random"}`)
	if problems, err := b.Pool.Check(t.Context()); err != nil || len(problems) > 0 {
		t.Fatalf("check: %v %v", problems, err)
	}
}

// A push's W3C traceparent (a field, or the request's header) comes back
// with the job on every pop.
func TestTraceParent(t *testing.T) {
	b := broker(t)
	api := b.URL + "/api/v1"
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	mustCall(t, 201, "POST", api+"/jobs", `{"topic":"tr","body":"field","traceparent":"`+tp+`"}`)
	req, _ := http.NewRequest("POST", api+"/jobs", strings.NewReader(`{"topic":"tr","body":"header"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", tp)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("push with the header: %v %v", resp, err)
	}
	resp.Body.Close()
	for _, body := range []string{"field", "header"} {
		if j := mustCall(t, 200, "GET", api+"/pop?topic=tr", ``); j["body"] != body || j["traceparent"] != tp {
			t.Fatalf("pop: %v, want %q with its traceparent", j, body)
		}
	}
	for _, bad := range []string{"00-0000-00f067aa0ba902b7-01", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "nope"} {
		mustCall(t, 400, "POST", api+"/jobs", `{"topic":"tr","body":"x","traceparent":"`+bad+`"}`)
	}
}

// A topic's jobs, listed by state and page, bodies cut to a preview.
func TestJobLists(t *testing.T) {
	b := broker(t)
	api := b.URL + "/api/v1"
	for i := range 7 {
		mustCall(t, 201, "POST", api+"/jobs", fmt.Sprintf(`{"topic":"l","body":"%d%s","priority":%d}`, i, strings.Repeat("x", 300), 10-i))
	}
	mustCall(t, 201, "POST", api+"/jobs", `{"topic":"l","body":"later","delay":60}`)
	page := mustCall(t, 200, "GET", api+"/topics/l/jobs?state=ready&offset=2&limit=3", ``)
	jobs, _ := page["jobs"].([]any)
	if page["total"] != 7.0 || len(jobs) != 3 {
		t.Fatalf("page: %v", page)
	}
	first := jobs[0].(map[string]any)
	if body := first["body"].(string); !strings.HasPrefix(body, "4") || len(body) != 200 { // by priority: 6, 5, then 4
		t.Fatalf("the page's first job: %v (body %d bytes, want the preview of 200)", first, len(body))
	}
	if d := mustCall(t, 200, "GET", api+"/topics/l/jobs?state=delayed", ``); d["total"] != 1.0 {
		t.Fatalf("delayed: %v", d)
	}
	mustCall(t, 400, "GET", api+"/topics/l/jobs?state=gone", ``)
	if e := mustCall(t, 200, "GET", api+"/topics/nothing/jobs", ``); e["total"] != 0.0 {
		t.Fatalf("an unknown topic: %v", e)
	}
}

// The brokers sample the server's counters into Redis: /api/v1/history.
func TestHistoryOverHTTP(t *testing.T) {
	b := brokertest.Fresh(t, func(c *config.Config) { c.HistoryEvery = 50 * time.Millisecond })
	mustCall(t, 201, "POST", b.URL+"/api/v1/jobs", `{"topic":"h","body":"x"}`)
	deadline := time.Now().Add(time.Minute) // a sample each 50 ms: a minute only for a failure
	for {
		h := mustCall(t, 200, "GET", b.URL+"/api/v1/history", ``)
		samples, _ := h["samples"].([]any)
		if len(samples) >= 3 {
			last := samples[len(samples)-1].(map[string]any)
			if last["pushed"] != 1.0 || last["ready"] != 1.0 || last["t"].(float64) < samples[0].(map[string]any)["t"].(float64) {
				t.Fatalf("history: %v", samples)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("history: %d samples after a minute", len(samples))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
