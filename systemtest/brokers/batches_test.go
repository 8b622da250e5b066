package brokers

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/gmq/gmq/internal/redistest"
	"github.com/gmq/gmq/systemtest/harness"
)

// popAckHTTP pops topic's next job on b (within 30 s) and acks it with
// result ("" none), returning it.
func popAckHTTP(t *testing.T, b *harness.BrokerProc, topic, result string) map[string]any {
	t.Helper()
	j := b.Must(200, "GET", "/api/v1/pop?topic="+topic+"&timeout=30", ``)
	body := ``
	if result != "" {
		body = `{"result":` + result + `}`
	}
	b.Must(200, "POST", "/api/v1/jobs/"+j["id"].(string)+"/ack", body)
	return j
}

// A batch over HTTP, on two brokers: its jobs are popped and acked on
// either; on_complete is pushed once, after the last, with the batch's
// summary (meta and results too); a member's view names its batch; bad
// input is refused with the reason, and a batch that is not there is 404.
func TestBatchesOverHTTP(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	a, b := harness.StartBroker(t, srv.URL()), harness.StartBroker(t, srv.URL())
	made := a.Must(201, "POST", "/api/v1/batches", `{"jobs":[
		{"topic":"import-rows","body":"rows 1-100","ttr":60},
		{"topic":"import-rows","body":"rows 101-200","ttr":60},
		{"topic":"import-files","body":"file.csv","ttr":60}],
		"on_complete":{"topic":"import-done","body":{"notify":"ops"},"with_result":true},
		"on_success":{"topic":"import-ok","body":"all good"},
		"meta":{"import":7},"with_results":true}`)
	id, ids := made["id"].(string), made["ids"].([]any)
	if len(ids) != 3 {
		t.Fatalf("created: %v", made)
	}
	if v := b.Must(200, "GET", "/api/v1/jobs/"+ids[2].(string), ``); v["batch"] != id {
		t.Fatalf("a member's view: %v, want batch %s", v, id)
	}
	if v := b.Must(200, "GET", "/api/v1/batches/"+id, ``); v["state"] != "closed" || v["pending"] != 3.0 || v["total"] != 3.0 {
		t.Fatalf("the new batch: %v", v)
	}
	popAckHTTP(t, a, "import-rows", `{"rows":100}`)
	popAckHTTP(t, b, "import-rows", ``)
	b.Must(204, "GET", "/api/v1/pop?topic=import-done&timeout=0", ``)
	popAckHTTP(t, b, "import-files", `"ok"`)
	done := popAckHTTP(t, a, "import-done", ``)
	var body struct {
		Body   map[string]any `json:"body"`
		Result struct {
			Batch     string         `json:"batch"`
			State     string         `json:"state"`
			Total     int            `json:"total"`
			Completed int            `json:"completed"`
			Meta      map[string]any `json:"meta"`
			Results   map[string]any `json:"results"`
		} `json:"result"`
	}
	raw, _ := json.Marshal(done["body"])
	if err := json.Unmarshal(raw, &body); err != nil || body.Body["notify"] != "ops" || body.Result.Batch != id ||
		body.Result.State != "done" || body.Result.Total != 3 || body.Result.Completed != 3 || body.Result.Meta["import"] != 7.0 ||
		len(body.Result.Results) != 3 || body.Result.Results[ids[2].(string)] != "ok" {
		t.Fatalf("on_complete's body: %s (%v)", raw, err)
	}
	if ok := popAckHTTP(t, b, "import-ok", ``); ok["body"] != "all good" {
		t.Fatalf("on_success: %v", ok)
	}
	v := a.Must(200, "GET", "/api/v1/batches/"+id, ``)
	if v["state"] != "done" || v["pending"] != 0.0 || v["completed"] != 3.0 || v["finished_at"] == nil {
		t.Fatalf("the batch done: %v", v)
	}
	for _, topic := range []string{"import-done", "import-ok"} {
		b.Must(204, "GET", "/api/v1/pop?topic="+topic+"&timeout=0", ``)
	}
	// A done batch takes no more; one not there is not found.
	a.Must(409, "POST", "/api/v1/batches/"+id+"/jobs", `{"jobs":[{"topic":"import-rows","body":"late"}]}`)
	a.Must(404, "GET", "/api/v1/batches/12345", ``)
	a.Must(404, "GET", "/api/v1/batches/nope", ``)
	a.Must(404, "GET", "/api/v1/batches/0"+id, ``) // one spelling of an id
	for _, tc := range []struct{ body, says string }{
		{`{"jobs":[{"topic":"t","body":"x"}],"on_finish":{"topic":"t","body":"y"}}`, "on_finish"},
		{`{"jobs":[{"topic":"t","body":"x","unique":{"key":"k","for":60,"mode":"replace"}}]}`, "mode reject"},
		{`{"jobs":[{"topic":"t","body":"x"}],"on_complete":{"topic":"t","body":"y","unique":{"key":"k","for":60}}}`, "unique"},
		{`{"jobs":[{"topic":"t"}]}`, "body is missing"},
		{`{"jobs":"x"}`, "jobs"},
		{`{"jobs":[],"open":"yes"}`, "open"},
		{`{"jobs":[],"meta":{"n":1e400}}`, "meta"},
	} {
		got, err := a.Do("POST", "/api/v1/batches", tc.body)
		if err != nil || got.Code != 400 || !strings.Contains(fmt.Sprint(got.Body["error"]), tc.says) {
			t.Errorf("create %s: %d %v %v, want 400 saying %q", tc.body, got.Code, got.Body, err, tc.says)
		}
	}
}

// An open batch takes jobs until it is closed, and finishes only then;
// a member that dies pushes on_death once, and on_success never. DELETE
// cancels what has not ended, and pushes no callback.
func TestOpenAndCancelledBatchesOverHTTP(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	b := harness.StartBroker(t, srv.URL())
	id := b.Must(201, "POST", "/api/v1/batches", `{"open":true,"on_complete":{"topic":"ob-done","body":"c"},
		"on_success":{"topic":"ob-ok","body":"s"},"on_death":{"topic":"ob-death","body":"d","with_result":true}}`)["id"].(string)
	b.Must(201, "POST", "/api/v1/batches/"+id+"/jobs", `{"jobs":[{"topic":"ob-work","body":"1","ttr":60,"retry":{"max_attempts":1}}]}`)
	j := b.Must(200, "GET", "/api/v1/pop?topic=ob-work&timeout=30", ``)
	b.Must(200, "POST", "/api/v1/jobs/"+j["id"].(string)+"/fail", `{"error":"disk full"}`)
	death := popAckHTTP(t, b, "ob-death", ``)
	if raw, _ := json.Marshal(death["body"]); !strings.Contains(string(raw), `"dead":1`) {
		t.Fatalf("on_death's body: %s", raw)
	}
	harness.WaitUntil(t, "the death counted", func() bool {
		v := b.Must(200, "GET", "/api/v1/batches/"+id, ``)
		dead, _ := v["dead_jobs"].(map[string]any)
		return v["dead"] == 1.0 && dead[j["id"].(string)] == "disk full"
	})
	b.Must(204, "GET", "/api/v1/pop?topic=ob-done&timeout=0", ``) // open: not done
	b.Must(201, "POST", "/api/v1/batches/"+id+"/jobs", `{"jobs":[{"topic":"ob-work","body":"2","ttr":60}]}`)
	popAckHTTP(t, b, "ob-work", ``)
	if v := b.Must(200, "POST", "/api/v1/batches/"+id+"/close", ``); v["state"] == "open" {
		t.Fatalf("closed: %v", v)
	}
	popAckHTTP(t, b, "ob-done", ``)
	b.Must(204, "GET", "/api/v1/pop?topic=ob-ok&timeout=0", ``)
	b.Must(204, "GET", "/api/v1/pop?topic=ob-death&timeout=0", ``)

	cancel := b.Must(201, "POST", "/api/v1/batches", `{"jobs":[{"topic":"cb-work","body":"1","delay":3600},{"topic":"cb-work","body":"2","delay":3600}],
		"on_complete":{"topic":"cb-done","body":"c"}}`)["id"].(string)
	if got := b.Must(200, "DELETE", "/api/v1/batches/"+cancel, ``); got["cancelled"] != 2.0 {
		t.Fatalf("cancel: %v", got)
	}
	harness.WaitUntil(t, "the cancelled batch finished", func() bool {
		v := b.Must(200, "GET", "/api/v1/batches/"+cancel, ``)
		return v["state"] == "cancelled" && v["pending"] == 0.0 && v["removed"] == 2.0
	})
	b.Must(204, "GET", "/api/v1/pop?topic=cb-done&timeout=1", ``)
	b.Must(409, "POST", "/api/v1/batches/"+cancel+"/close", ``)
}
