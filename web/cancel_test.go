package web_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
)

// Cancelling over HTTP: a waiting job at once (200, kept cancelled where
// completed jobs are kept), a held one at its consumer's next progress
// (202, then 410), a wait for its end told "cancelled"; progress and a
// log on the job; the cancelled list; an ended job refused (409).
func TestCancelAndProgressOverHTTP(t *testing.T) {
	b := broker(t)
	api := b.URL + "/api/v1"
	mustCall(t, 200, "PUT", api+"/topics/jobs/config", `{"keep_completed": 600}`)

	mustCall(t, 201, "POST", api+"/jobs", `{"id":"waiting","topic":"jobs","body":"x","delay":3600}`)
	if got := mustCall(t, 200, "POST", api+"/jobs/waiting/cancel", ``); got["state"] != "cancelled" || got["cancelled_at"] == nil {
		t.Fatalf("cancel a delayed job: %v", got)
	}
	mustCall(t, 409, "POST", api+"/jobs/waiting/cancel", ``)
	mustCall(t, 404, "POST", api+"/jobs/nobody/cancel", ``)
	mustCall(t, 400, "POST", api+"/jobs/waiting/cancel", `{"why":"x"}`)
	mustCall(t, 201, "POST", api+"/jobs", `{"id":"empty-body","topic":"plain","body":"x"}`)
	mustCall(t, 200, "POST", api+"/jobs/empty-body/cancel", `{}`) // gmq cancel sends one
	mustCall(t, 201, "POST", api+"/jobs", `{"id":"plain-1","topic":"plain","body":"x"}`)
	if got := mustCall(t, 200, "POST", api+"/jobs/plain-1/cancel", ``); got["state"] != "cancelled" {
		t.Fatalf("cancel a job not kept: %v", got)
	}
	mustCall(t, 404, "GET", api+"/jobs/plain-1", ``)

	// A wait for a job that is cancelled where nothing keeps it: cancelled.
	mustCall(t, 201, "POST", api+"/jobs", `{"id":"plain-2","topic":"plain","body":"x","delay":3600}`)
	plainEnd := make(chan map[string]any, 1)
	go func() {
		_, body := brokertest.Call(t, "GET", api+"/jobs/plain-2/wait?timeout=30", ``)
		plainEnd <- body
	}()
	waitUntil(t, "the wait under way", func() bool {
		return mustCall(t, 200, "GET", api+"/stats", ``)["current_end_waits"] == 1.0
	})
	mustCall(t, 200, "POST", api+"/jobs/plain-2/cancel", ``)
	if got := <-plainEnd; got["state"] != "cancelled" {
		t.Fatalf("the wait for a job cancelled and not kept: %v", got)
	}

	mustCall(t, 201, "POST", api+"/jobs", `{"id":"held","topic":"jobs","body":"x"}`)
	j := mustCall(t, 200, "GET", api+"/pop?topic=jobs", ``)
	progress := fmt.Sprintf(`{"attempt":%v,"progress":{"pages":3,"of":7},"log":"page 3 of 7"}`, j["attempt"])
	got := mustCall(t, 200, "POST", api+"/jobs/held/progress", progress)
	log, _ := got["log"].([]any)
	if fmt.Sprint(got["progress"]) != "map[of:7 pages:3]" || len(log) != 1 || log[0].(map[string]any)["line"] != "page 3 of 7" {
		t.Fatalf("progress: %v", got)
	}
	mustCall(t, 400, "POST", api+"/jobs/held/progress", fmt.Sprintf(`{"attempt":%v,"progress":{"pages":}}`, j["attempt"]))
	ended := make(chan map[string]any, 1)
	go func() {
		_, body := brokertest.Call(t, "GET", api+"/jobs/held/wait?timeout=30", ``)
		ended <- body
	}()
	waitUntil(t, "the wait under way", func() bool {
		return mustCall(t, 200, "GET", api+"/stats", ``)["current_end_waits"] == 1.0
	})
	if got := mustCall(t, 202, "POST", api+"/jobs/held/cancel", ``); got["state"] != "reserved" || got["cancelling"] != true {
		t.Fatalf("cancel a held job: %v", got)
	}
	mustCall(t, 410, "POST", api+"/jobs/held/progress", progress)
	mustCall(t, 410, "POST", api+"/jobs/held/ack", fmt.Sprintf(`{"attempt":%v}`, j["attempt"]))
	select {
	case got := <-ended:
		if got["state"] != "cancelled" || fmt.Sprint(got["progress"]) != "map[of:7 pages:3]" {
			t.Fatalf("the wait: %v, want the job cancelled, with its last progress", got)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the wait was not answered 20 s after the job was cancelled")
	}

	list := mustCall(t, 200, "GET", api+"/topics/jobs/cancelled", ``)
	if list["total"] != 2.0 {
		t.Fatalf("the cancelled list: %v", list)
	}
	if st := mustCall(t, 200, "GET", api+"/topics/jobs", ``); st["cancelled"] != 2.0 || st["total_cancelled"] != 2.0 {
		t.Fatalf("topic stats: %v", st)
	}
	if out := mustCall(t, 200, "POST", api+"/topics/jobs/cancelled/retry", `{"ids":["waiting"]}`); out["retried"] != 1.0 {
		t.Fatalf("push a cancelled job again: %v", out)
	}
	if out := mustCall(t, 200, "DELETE", api+"/topics/jobs/cancelled", ``); out["deleted"] != 1.0 {
		t.Fatalf("delete the cancelled set: %v", out)
	}
}
