package brokers

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gmq/gmq/internal/redistest"
	"github.com/gmq/gmq/systemtest/harness"
)

// A job pushed after others, over HTTP, waits until they complete (one
// named by its client id, one by its number), then runs with their
// results; a push naming a job that is not there, or a bad policy, is
// refused with the reason.
func TestDependenciesOverHTTP(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	b := harness.StartBroker(t, srv.URL())
	b.Must(201, "POST", "/api/v1/jobs", `{"id":"extract","topic":"etl-extract","body":"x","ttr":60}`)
	second := b.Must(201, "POST", "/api/v1/jobs", `{"topic":"etl-clean","body":"y","ttr":60}`)["id"].(string)
	load := b.Must(201, "POST", "/api/v1/jobs", `{"topic":"etl-load","body":"z","ttr":60,"after":["extract",`+second+`],"with_results":true}`)["id"].(string)
	if v := b.Must(200, "GET", "/api/v1/jobs/"+load, ``); v["state"] != "waiting" || len(v["waiting_for"].([]any)) != 2 {
		t.Fatalf("the dependent: %v, want waiting for two", v)
	}
	b.Must(204, "GET", "/api/v1/pop?topic=etl-load&timeout=0", ``)
	for _, topic := range []string{"etl-extract", "etl-clean"} {
		j := b.Must(200, "GET", "/api/v1/pop?topic="+topic+"&timeout=30", ``)
		b.Must(200, "POST", "/api/v1/jobs/"+j["id"].(string)+"/ack", `{"result":{"from":"`+topic+`"}}`)
	}
	j := b.Must(200, "GET", "/api/v1/pop?topic=etl-load&timeout=30", ``)
	if j["id"] != load {
		t.Fatalf("popped %v, want the dependent %s", j, load)
	}
	v := b.Must(200, "GET", "/api/v1/jobs/"+load, ``)
	results, _ := v["dependency_results"].(map[string]any)
	if r, _ := results[second].(map[string]any); r["from"] != "etl-clean" || len(results) != 2 {
		t.Fatalf("its dependencies' results: %v", v)
	}
	for _, tc := range []struct{ body, says string }{
		{`{"topic":"etl-load","body":"z","after":["no-such-job"]}`, "not found"},
		{`{"topic":"etl-load","body":"z","after":[99999999999]}`, "not found"},
		{`{"topic":"etl-load","body":"z","after":["extract"],"on_dependency_failure":"retry"}`, "on_dependency_failure"},
		{`{"topic":"etl-load","body":"z","after":[]}`, "after"},
		{`{"topic":"etl-load","body":"z","with_results":true}`, "go with after"},
	} {
		got, err := b.Do("POST", "/api/v1/jobs", tc.body)
		if err != nil || got.Code/100 != 4 || got.Code == 404 || got.Code == 409 || !strings.Contains(fmt.Sprint(got.Body["error"]), tc.says) {
			t.Errorf("push %s: %d %v %v, want a 4xx saying %q", tc.body, got.Code, got.Body, err, tc.says)
		}
	}
}

// A dependency that dies cancels its dependent, which shows why; with
// on_dependency_failure "run" the dependent runs anyway.
func TestDependencyDiesOverHTTP(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	b := harness.StartBroker(t, srv.URL())
	a := b.Must(201, "POST", "/api/v1/jobs", `{"topic":"die-a","body":"x","ttr":60,"retry":{"max_attempts":1}}`)["id"].(string)
	cancelled := b.Must(201, "POST", "/api/v1/jobs", `{"topic":"die-d","body":"y","ttr":60,"keep_completed":600,"after":[`+a+`]}`)["id"].(string)
	runs := b.Must(201, "POST", "/api/v1/jobs", `{"topic":"die-r","body":"z","ttr":60,"after":[`+a+`],"on_dependency_failure":"run"}`)["id"].(string)
	j := b.Must(200, "GET", "/api/v1/pop?topic=die-a&timeout=30", ``)
	b.Must(200, "POST", "/api/v1/jobs/"+j["id"].(string)+"/fail", `{"error":"boom"}`)
	if j := b.Must(200, "GET", "/api/v1/pop?topic=die-r&timeout=30", ``); j["id"] != runs {
		t.Fatalf("popped %v, want %s, which runs anyway", j, runs)
	}
	var v map[string]any
	harness.WaitUntil(t, "the dependent cancelled", func() bool {
		v = b.Must(200, "GET", "/api/v1/jobs/"+cancelled, ``)
		return v["state"] == "cancelled"
	})
	if !strings.Contains(fmt.Sprint(v["last_error"]), "dependency "+a+" dead") {
		t.Fatalf("the cancelled dependent: %v, want it to say why", v)
	}
	got, err := b.Do("POST", "/api/v1/jobs", `{"topic":"die-d","body":"late","after":[`+a+`]}`)
	if err != nil || got.Code != 409 || !strings.Contains(fmt.Sprint(got.Body["error"]), "dead") {
		t.Fatalf("a push after a dead job: %d %v %v, want 409 saying it is dead", got.Code, got.Body, err)
	}
}
