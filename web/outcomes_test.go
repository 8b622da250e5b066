package web_test

import (
	"fmt"
	"strings"
	"testing"
)

// Completed jobs over HTTP: a topic's keep_completed, an ack's result (a
// single ack, a batch ack, an ack and pop), the job shown completed with
// it, an ack retried, the completed list newest first, pushed again,
// deleted; a result too big; a job's own keep_completed.
func TestCompletedJobsOverHTTP(t *testing.T) {
	b := broker(t)
	api := b.URL + "/api/v1"
	mustCall(t, 400, "PUT", api+"/topics/reports/config", `{"max_result": 0}`)
	mustCall(t, 200, "PUT", api+"/topics/reports/config", `{"keep_completed": 3600, "max_result": 64}`)
	mustCall(t, 201, "POST", api+"/jobs", `{"id":"report-8812","topic":"reports","body":{"user":42}}`)
	j := mustCall(t, 200, "GET", api+"/pop?topic=reports", ``)
	attempt := j["attempt"]

	big := `"` + strings.Repeat("x", 80) + `"`
	mustCall(t, 413, "POST", api+"/jobs/report-8812/ack", fmt.Sprintf(`{"attempt":%v,"result":%s}`, attempt, big))
	mustCall(t, 400, "POST", api+"/jobs/report-8812/ack", fmt.Sprintf(`{"attempt":%v,"result":{"url":}}`, attempt))
	mustCall(t, 200, "POST", api+"/jobs/report-8812/ack", fmt.Sprintf(`{"attempt":%v,"result":{"url":"/r/8812.pdf"}}`, attempt))
	mustCall(t, 200, "POST", api+"/jobs/report-8812/ack", fmt.Sprintf(`{"attempt":%v}`, attempt)) // a client's retry
	mustCall(t, 409, "POST", api+"/jobs/report-8812/ack", `{"attempt":7}`)

	got := mustCall(t, 200, "GET", api+"/jobs/report-8812", ``)
	result, _ := got["result"].(map[string]any)
	if got["state"] != "completed" || result["url"] != "/r/8812.pdf" || got["completed_at"] == nil {
		t.Fatalf("the completed job: %v", got)
	}
	if st := mustCall(t, 200, "GET", api+"/topics/reports", ``); st["completed"] != 1.0 || st["total_completed"] != 1.0 || st["ready"] != 0.0 {
		t.Fatalf("topic stats: %v", st)
	}

	// A batch ack and an ack and pop carry results too.
	mustCall(t, 201, "POST", api+"/jobs/batch", `{"jobs":[{"id":"r-2","topic":"reports","body":"2"},{"id":"r-3","topic":"reports","body":"3"},{"id":"r-4","topic":"reports","body":"4"}]}`)
	two := mustCall(t, 200, "GET", api+"/pop?topic=reports", ``)
	three := mustCall(t, 200, "POST", api+"/jobs/r-2/ack", fmt.Sprintf(`{"attempt":%v,"result":2,"next":{"topic":"reports"}}`, two["attempt"]))
	mustCall(t, 400, "POST", api+"/ack", fmt.Sprintf(`{"jobs":[{"id":"r-3","attempt":%v},{"id":"r-3","attempt":%v}]}`, three["attempt"], three["attempt"]))
	mustCall(t, 400, "POST", api+"/jobs/r-3/ack", fmt.Sprintf(`{"attempt":%v,"result":%s1%s}`, three["attempt"], strings.Repeat("[", 65), strings.Repeat("]", 65)))
	mustCall(t, 200, "POST", api+"/ack", fmt.Sprintf(`{"jobs":[{"id":"r-3","attempt":%v,"result":[3]}]}`, three["attempt"]))
	for id, want := range map[string]string{"r-2": "2", "r-3": "[3]"} {
		if got := mustCall(t, 200, "GET", api+"/jobs/"+id, ``); got["state"] != "completed" || fmt.Sprint(got["result"]) != want {
			t.Fatalf("%s: %v, want completed with %s", id, got, want)
		}
	}
	list := mustCall(t, 200, "GET", api+"/topics/reports/completed", ``)
	jobs, _ := list["jobs"].([]any)
	if list["total"] != 3.0 || len(jobs) != 3 || jobs[2].(map[string]any)["id"] != "report-8812" {
		t.Fatalf("the completed list, newest first: %v", list)
	}
	if page := mustCall(t, 200, "GET", api+"/topics/reports/jobs?state=completed&limit=1", ``); page["total"] != 3.0 {
		t.Fatalf("the completed jobs as a page of the topic's jobs: %v", page)
	}

	// Pushed again: ready, its result forgotten; then deleted.
	if out := mustCall(t, 200, "POST", api+"/topics/reports/completed/retry", `{"ids":["report-8812"]}`); out["retried"] != 1.0 {
		t.Fatalf("push again: %v", out)
	}
	if got := mustCall(t, 200, "GET", api+"/jobs/report-8812", ``); got["state"] != "ready" || got["result"] != nil {
		t.Fatalf("pushed again: %v", got)
	}
	if out := mustCall(t, 200, "DELETE", api+"/topics/reports/completed", ``); out["deleted"] != 2.0 {
		t.Fatalf("delete the completed set: %v", out)
	}

	// A job's own keep_completed, on a topic that keeps none.
	mustCall(t, 400, "POST", api+"/jobs", `{"topic":"mail","body":"x","keep_completed":-1}`)
	mustCall(t, 201, "POST", api+"/jobs", `{"id":"own","topic":"mail","body":"x","keep_completed":60}`)
	j = mustCall(t, 200, "GET", api+"/pop?topic=mail", ``)
	if j["keep_completed"] != 60.0 {
		t.Fatalf("the popped job: %v, want its keep_completed", j)
	}
	mustCall(t, 200, "POST", api+"/jobs/own/ack", ``)
	if got := mustCall(t, 200, "GET", api+"/jobs/own", ``); got["state"] != "completed" {
		t.Fatalf("a job with its own keep_completed: %v", got)
	}
	// A job's own handler timeout, which the clients' worker loops obey.
	mustCall(t, 400, "POST", api+"/jobs", `{"topic":"timed","body":"x","timeout":"soon"}`)
	mustCall(t, 201, "POST", api+"/jobs", `{"topic":"timed","body":"x","timeout":2.5}`)
	if j := mustCall(t, 200, "GET", api+"/pop?topic=timed", ``); j["timeout"] != 2.5 {
		t.Fatalf("a job pushed with a timeout: %v", j)
	}
	// A DELETE is not an ack: the job is gone.
	mustCall(t, 200, "DELETE", api+"/jobs/own", ``)
	mustCall(t, 404, "GET", api+"/jobs/own", ``)
}

// A result is kept by default (keep_results, an hour): the ack says for
// how long (a single ack, a batch ack, an ack with follow-ups), and the
// producer reads it; an ack without a result keeps nothing; keep_results 0
// keeps none; a topic's keep_completed wins, shorter or not.
func TestResultsKeptByDefault(t *testing.T) {
	b := broker(t)
	api := b.URL + "/api/v1"
	mustCall(t, 201, "POST", api+"/jobs/batch", `{"jobs":[{"id":"kr-1","topic":"kr","body":"1"},{"id":"kr-2","topic":"kr","body":"2"},`+
		`{"id":"kr-3","topic":"kr","body":"3"},{"id":"kr-4","topic":"kr","body":"4"}]}`)
	mustCall(t, 200, "POST", api+"/pop", `{"topics":["kr"],"count":4}`)
	for _, tc := range []struct {
		path, body string
		want       map[string]any // the answer's fields checked
	}{
		{"/jobs/kr-1/ack", `{"result":{"rows":7}}`, map[string]any{"acked": "kr-1", "kept_for": 3600.0}},
		{"/jobs/kr-2/ack", ``, map[string]any{"acked": "kr-2", "kept_for": nil}},
		{"/ack", `{"jobs":[{"id":"kr-3","result":[3]}]}`, map[string]any{"kept_for": map[string]any{"kr-3": 3600.0}}},
		{"/jobs/kr-4/ack", `{"result":4,"push":[{"topic":"kr-next","body":"n"}]}`, map[string]any{"acked": "kr-4", "kept_for": 3600.0}},
	} {
		got := mustCall(t, 200, "POST", api+tc.path, tc.body)
		for k, v := range tc.want {
			if fmt.Sprint(got[k]) != fmt.Sprint(v) {
				t.Fatalf("POST %s %s: %v, want %s: %v", tc.path, tc.body, got, k, v)
			}
		}
	}
	for id, want := range map[string]string{"kr-1": "map[rows:7]", "kr-3": "[3]", "kr-4": "4"} {
		if got := mustCall(t, 200, "GET", api+"/jobs/"+id, ``); got["state"] != "completed" || fmt.Sprint(got["result"]) != want {
			t.Fatalf("%s: %v, want completed with %s", id, got, want)
		}
	}
	mustCall(t, 404, "GET", api+"/jobs/kr-2", ``) // acked without a result: gone, as before

	mustCall(t, 200, "PUT", api+"/topics/kr-off/config", `{"keep_results": 0}`)
	mustCall(t, 200, "PUT", api+"/topics/kr-short/config", `{"keep_completed": 60}`)
	for topic, want := range map[string]any{"kr-off": nil, "kr-short": 60.0} {
		mustCall(t, 201, "POST", api+"/jobs", `{"id":"`+topic+`-1","topic":"`+topic+`","body":"x"}`)
		mustCall(t, 200, "GET", api+"/pop?topic="+topic, ``)
		if got := mustCall(t, 200, "POST", api+"/jobs/"+topic+"-1/ack", `{"result":"r"}`); fmt.Sprint(got["kept_for"]) != fmt.Sprint(want) {
			t.Fatalf("an ack with a result on %s: %v, want kept_for %v", topic, got, want)
		}
	}
	mustCall(t, 404, "GET", api+"/jobs/kr-off-1", ``)
	mustCall(t, 400, "PUT", api+"/topics/kr-off/config", `{"keep_results": -1}`)
}

// A job's view shows its retry policy: max_attempts (its own, its topic's
// or the default) and, while it waits out a backoff, when it is tried
// again; a topic's config view shows every setting's effective value and
// where each comes from, the built-in defaults marked (issue 49).
func TestRetryPolicyIsShown(t *testing.T) {
	b := broker(t)
	api := b.URL + "/api/v1"
	mustCall(t, 200, "PUT", api+"/topics/rp-five/config", `{"max_attempts": 5, "backoff": "fixed", "backoff_base": 600}`)
	mustCall(t, 200, "PUT", api+"/topics/rp-small/config", `{"max_item_size": 100}`)
	mustCall(t, 200, "PUT", api+"/topics/rp-big/config", `{"max_item_size": 5000}`)
	for _, tc := range []struct {
		name, topic, push string
		want              float64
	}{
		{"the default", "rp-default", ``, 25},
		{"its topic's", "rp-five", ``, 5},
		{"its own", "rp-five", `,"retry":{"max_attempts":2}`, 2},
		{"its own, for ever", "rp-default", `,"retry":{"max_attempts":0}`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := mustCall(t, 201, "POST", api+"/jobs", `{"topic":"`+tc.topic+`","body":"x"`+tc.push+`}`)["id"].(string)
			if got := mustCall(t, 200, "GET", api+"/jobs/"+id, ``); got["max_attempts"] != tc.want || got["next_attempt_at"] != nil {
				t.Fatalf("a ready job: %v, want max_attempts %v and no next attempt", got, tc.want)
			}
			j := mustCall(t, 200, "GET", api+"/pop?topic="+tc.topic, ``)
			failed := mustCall(t, 200, "POST", api+"/jobs/"+id+"/fail", fmt.Sprintf(`{"attempt":%v,"error":"no"}`, j["attempt"]))
			got := mustCall(t, 200, "GET", api+"/jobs/"+id, ``)
			if got["state"] != "delayed" || got["failures"] != 1.0 || got["max_attempts"] != tc.want ||
				got["next_attempt_at"] == nil || got["next_attempt_at"] != got["due"] || failed["next_attempt_at"] != got["due"] {
				t.Fatalf("a failed job: %v (the fail answered %v), want max_attempts %v and its next attempt at its due time", got, failed, tc.want)
			}
			mustCall(t, 200, "DELETE", api+"/jobs/"+id, ``)
		})
	}

	cfg := mustCall(t, 200, "GET", api+"/topics/rp-five/config", ``)
	effective, _ := cfg["effective"].(map[string]any)
	from, _ := cfg["from"].(map[string]any)
	for name, want := range map[string][2]any{
		"max_attempts":   {5.0, "run"},
		"backoff":        {"fixed", "run"},
		"backoff_max":    {3600.0, "built_in"},
		"backoff_jitter": {false, "built_in"},
		"keep_results":   {3600.0, "built_in"},
		"max_completed":  {10000.0, "built_in"},
	} {
		if effective[name] != want[0] || from[name] != want[1] {
			t.Errorf("%s: effective %v from %v, want %v from %v", name, effective[name], from[name], want[0], want[1])
		}
	}
	// max_item_size shows the cap a push meets: [jobs] max_body where the
	// topic sets none of its own (0) or one above it.
	for _, tc := range []struct {
		topic string
		want  float64
	}{{"rp-five", 1024}, {"rp-small", 100}, {"rp-big", 1024}} { // broker(t)'s max_body is 1024
		got, _ := mustCall(t, 200, "GET", api+"/topics/"+tc.topic+"/config", ``)["effective"].(map[string]any)
		if got["max_item_size"] != tc.want {
			t.Errorf("%s: effective max_item_size %v, want %v", tc.topic, got["max_item_size"], tc.want)
		}
	}
	if settings, _ := cfg["settings"].(map[string]any); len(settings) != 3 || cfg["defaults"] == nil {
		t.Errorf("the fields before: settings %v, defaults %v; want them as they were (the settings set, the [topics] layer)", settings, cfg["defaults"])
	}
}
