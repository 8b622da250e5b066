package web_test

import (
	"testing"
)

// PATCH /api/v1/jobs/{id} changes a waiting job's delay, priority or body
// and answers with the job; what it cannot change it says, each with its
// status.
func TestUpdateJobOverHTTP(t *testing.T) {
	b := broker(t)
	api := b.URL + "/api/v1"
	mustCall(t, 201, "POST", api+"/jobs", `{"id":"report-1","topic":"reports","body":"draft","delay":3600}`)
	mustCall(t, 201, "POST", api+"/jobs", `{"id":"report-2","topic":"reports","body":"x","priority":5}`)
	j := mustCall(t, 200, "PATCH", api+"/jobs/report-1", `{"delay":0,"priority":1,"body":"final"}`)
	if j["state"] != "ready" || j["priority"] != 1.0 || j["body"] != "final" {
		t.Fatalf("after the update: %v", j)
	}
	if j := mustCall(t, 200, "PATCH", api+"/jobs/report-2", `{"delay":"90"}`); j["state"] != "delayed" || j["due"] == nil {
		t.Fatalf("delayed by an update: %v", j)
	}
	for _, c := range []struct {
		body string
		code int
	}{
		{``, 400},
		{`{}`, 400},
		{`{"ttr": 5}`, 400},
		{`{"delay": -1}`, 400},
		{`{"priority": 4294967296}`, 400},
		{`{"body": 7}`, 400},
	} {
		mustCall(t, c.code, "PATCH", api+"/jobs/report-2", c.body)
	}
	mustCall(t, 404, "PATCH", api+"/jobs/nothing-here", `{"priority":1}`)
	popped := mustCall(t, 200, "GET", api+"/pop?topic=reports", ``)
	if popped["id"] != "report-1" {
		t.Fatalf("popped %v, want report-1", popped["id"])
	}
	// Refusals in the client's terms: its verb and its id.
	if e := mustCall(t, 409, "PATCH", api+"/jobs/report-1", `{"priority":9}`); e["error"] != `update "report-1": the job is reserved` {
		t.Errorf("a reserved job: %v", e["error"])
	}
	mustCall(t, 200, "PUT", api+"/topics/reports/config", `{"max_item_size": 3}`)
	if e := mustCall(t, 413, "PATCH", api+"/jobs/report-2", `{"body":"four"}`); e["error"] != `update "report-2": job body too big: its topic's max_item_size is 3` {
		t.Errorf("a body over max_item_size: %v", e["error"])
	}
}
