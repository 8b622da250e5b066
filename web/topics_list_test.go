package web_test

import (
	"fmt"
	"strings"
	"testing"
)

// GET /api/v1/topics is a read: an empty topic it lists is still there
// afterwards (it used to be forgotten on the way, so a topic just listed
// answered 404). Offsets past the end are an empty page, a huge one
// included (int64's largest panicked), and limit is cut to 1,000.
func TestTopicListing(t *testing.T) {
	b := broker(t)
	api := b.URL + "/api/v1"
	mustCall(t, 201, "POST", api+"/jobs", `{"topic":"done","body":"x"}`)
	j := mustCall(t, 200, "GET", api+"/pop?topic=done", ``)
	mustCall(t, 200, "POST", api+"/jobs/"+j["id"].(string)+"/ack", ``)
	for range 2 {
		list := mustCall(t, 200, "GET", api+"/topics", ``)
		if list["total"] != 1.0 || len(list["topics"].([]any)) != 1 {
			t.Fatalf("listing: %v", list)
		}
		mustCall(t, 200, "GET", api+"/topics/done", ``)
	}
	for _, offset := range []string{"1", "1000000", "9223372036854775807"} {
		list := mustCall(t, 200, "GET", api+"/topics?offset="+offset, ``)
		if list["total"] != 1.0 || len(list["topics"].([]any)) != 0 {
			t.Errorf("offset %s: %v, want an empty page", offset, list)
		}
	}
	for _, q := range []string{"offset=-1", "offset=1e3", "limit=0", "limit=x", "offset=92233720368547758070"} {
		if code, out := call(t, "GET", api+"/topics?"+q, ``); code != 400 {
			t.Errorf("%s: %d %v, want 400", q, code, out)
		}
	}
	for i := range 1005 {
		mustCall(t, 201, "POST", api+"/jobs", fmt.Sprintf(`{"topic":"t%04d","body":"x"}`, i))
	}
	if list := mustCall(t, 200, "GET", api+"/topics?limit=9223372036854775807", ``); len(list["topics"].([]any)) != 1000 || list["total"] != 1006.0 {
		t.Errorf("a huge limit: %d topics of %v, want 1,000", len(list["topics"].([]any)), list["total"])
	}
}

// The topic and status bodies refuse unknown fields by name, as the job
// bodies do ({"secs": 60} would otherwise be "seconds is missing").
func TestTopicBodiesRefuseUnknownFields(t *testing.T) {
	b := broker(t)
	api := b.URL + "/api/v1"
	mustCall(t, 201, "POST", api+"/jobs", `{"topic":"k","body":"x"}`)
	for _, tt := range []struct{ method, path, body, says string }{
		{"POST", "/topics/k/kick", `{"bound":1,"bund":2}`, `unknown field "bund"`},
		{"POST", "/topics/k/pause", `{"seconds":60,"delay":1}`, `unknown field "delay"`},
		{"PUT", "/status", `{"status":"up","state":"readonly"}`, `unknown field "state"`},
	} {
		code, out := call(t, tt.method, api+tt.path, tt.body)
		if msg, _ := out["error"].(string); code != 400 || !strings.Contains(msg, tt.says) {
			t.Errorf("%s %s: %d %v, want 400 saying %q", tt.method, tt.path, code, out, tt.says)
		}
	}
	if st := mustCall(t, 200, "GET", api+"/status", ``); st["status"] != "up" {
		t.Errorf("a refused status changed it: %v", st)
	}
}
