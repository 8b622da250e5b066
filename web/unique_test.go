package web_test

import (
	"strings"
	"testing"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
	"github.com/gmq/gmq/job"
)

// A unique push over HTTP: 201 for a new job, 409 naming the job that holds
// the key, 200 with "unique" when a waiting job was replaced or debounced;
// malformed unique objects are 400s that say what is wrong.
func TestUniquePushOverHTTP(t *testing.T) {
	b := broker(t)
	api := b.URL + "/api/v1"
	first := mustCall(t, 201, "POST", api+"/jobs", `{"id":"welcome-42","topic":"mail","body":"hi","unique":{"key":"user-42","for":600}}`)
	held := mustCall(t, 409, "POST", api+"/jobs", `{"topic":"mail","body":"hi again","unique":{"key":"user-42","for":600}}`)
	if held["id"] != first["id"] || !strings.Contains(held["error"].(string), "welcome-42") {
		t.Fatalf("409 says %v, want it to name %v", held, first["id"])
	}
	report := mustCall(t, 201, "POST", api+"/jobs", `{"topic":"reports","body":"v1","delay":3600,"unique":{"key":"daily","for":600,"mode":"replace"}}`)
	again := mustCall(t, 200, "POST", api+"/jobs", `{"topic":"reports","body":"v2","unique":{"key":"daily","for":600,"mode":"replace"}}`)
	if again["id"] != report["id"] || again["unique"] != "replaced" {
		t.Fatalf("replace: %v, want job %v replaced", again, report["id"])
	}
	j := mustCall(t, 200, "GET", api+"/jobs/"+report["id"].(string), ``)
	if j["body"] != "v2" || j["state"] != "ready" {
		t.Fatalf("the replaced job: %v", j)
	}
	mustCall(t, 201, "POST", api+"/jobs", `{"topic":"index","body":"x","delay":5,"unique":{"key":"k","for":60,"mode":"debounce"}}`)
	if d := mustCall(t, 200, "POST", api+"/jobs", `{"topic":"index","body":"x","delay":5,"unique":{"key":"k","for":60,"mode":"debounce"}}`); d["unique"] != "debounced" {
		t.Fatalf("debounce: %v", d)
	}
	for _, c := range []struct{ body, says string }{
		{`{"topic":"m","body":"x","unique":{"for":60}}`, "key is missing"},
		{`{"topic":"m","body":"x","unique":{"key":"k"}}`, "for is missing"},
		{`{"topic":"m","body":"x","unique":{"key":"k","for":60,"mode":"sometimes"}}`, "reject, replace or debounce"},
		{`{"topic":"m","body":"x","unique":{"key":"k","for":0}}`, "unique for"},
		{`{"topic":"m","body":"x","unique":{"key":"k","for":99999999}}`, "unique for"},
		{`{"topic":"m","body":"x","unique":{"key":"","for":60}}`, "unique key"},
		{`{"topic":"m","body":"x","unique":{"key":"` + strings.Repeat("k", 257) + `","for":60}}`, "unique key"},
		{`{"topic":"m","body":"x","unique":{"key":"k","for":60,"window":5}}`, `unknown field "window"`},
		{`{"topic":"m","body":"x","unique":"k"}`, "unique"},
	} {
		got := mustCall(t, 400, "POST", api+"/jobs", c.body)
		if msg, _ := got["error"].(string); !strings.Contains(msg, c.says) {
			t.Errorf("%s: %q, want it to say %q", c.body, msg, c.says)
		}
	}
	// A batch may not repeat a key: which job took it would be chance.
	mustCall(t, 400, "POST", api+"/jobs/batch", `[{"topic":"m","body":"a","unique":{"key":"k","for":60}},{"topic":"m","body":"b","unique":{"key":"k","for":60}}]`)
}

// A push to an alias whose destination has unique_from = body and holds
// the body is not refused: that destination's holder stands for its copy
// (its other destinations stored theirs, so a 409 would make a producer
// push them twice).
func TestUniqueFromBodyBehindAnAlias(t *testing.T) {
	b := brokertest.Fresh(t, func(c *config.Config) {
		c.Aliases = map[string][]string{"al": {"ad1", "ad2"}}
		c.Topics = map[string]job.TopicConfig{"ad1": {"unique_from": "body"}}
	})
	api := b.URL + "/api/v1"
	mustCall(t, 201, "POST", api+"/jobs", `{"topic":"al","body":"same"}`)
	mustCall(t, 201, "POST", api+"/jobs", `{"topic":"al","body":"same"}`)
	if st := mustCall(t, 200, "GET", api+"/topics/ad1", ``); st["ready"] != 1.0 {
		t.Fatalf("ad1 holds %v ready jobs, want 1", st["ready"])
	}
	if st := mustCall(t, 200, "GET", api+"/topics/ad2", ``); st["ready"] != 2.0 {
		t.Fatalf("ad2 holds %v ready jobs, want 2", st["ready"])
	}
}

// A batch's ids name the job each push went to: a replace's, the waiting
// job it changed, by that job's own id.
func TestUniqueReplaceInABatch(t *testing.T) {
	b := broker(t)
	api := b.URL + "/api/v1"
	mustCall(t, 201, "POST", api+"/jobs", `{"id":"r1","topic":"rb","body":"v1","delay":60,"unique":{"key":"k","for":60,"mode":"replace"}}`)
	got := mustCall(t, 201, "POST", api+"/jobs/batch", `{"jobs":[{"id":"r2","topic":"rb","body":"v2","unique":{"key":"k","for":60,"mode":"replace"}},{"topic":"rb","body":"other"}]}`)
	if ids, _ := got["ids"].([]any); len(ids) != 2 || ids[0] != "r1" {
		t.Fatalf("batch answered %v, want r1 first", got)
	}
	if j := mustCall(t, 200, "GET", api+"/jobs/r1", ``); j["body"] != "v2" {
		t.Fatalf("r1: %v", j)
	}
}

// A topic's group_rate shows as a number, as its rate does.
func TestGroupRateIsANumber(t *testing.T) {
	b := broker(t)
	got := mustCall(t, 200, "PUT", b.URL+"/api/v1/topics/gr/config", `{"group_rate": 0.5, "rate": 2.5}`)
	if s := got["settings"].(map[string]any); s["group_rate"] != 0.5 || s["rate"] != 2.5 {
		t.Fatalf("settings: %v", s)
	}
}

// DELETE /api/v1/topics/{t}/unique/{key} frees a held key: the next push
// with it makes a job.
func TestReleaseUniqueKey(t *testing.T) {
	b := broker(t)
	api := b.URL + "/api/v1"
	mustCall(t, 201, "POST", api+"/jobs", `{"topic":"rel","body":"x","unique":{"key":"user-42","for":600}}`)
	mustCall(t, 409, "POST", api+"/jobs", `{"topic":"rel","body":"x","unique":{"key":"user-42","for":600}}`)
	mustCall(t, 200, "DELETE", api+"/topics/rel/unique/user-42", ``)
	mustCall(t, 404, "DELETE", api+"/topics/rel/unique/user-42", ``)
	mustCall(t, 201, "POST", api+"/jobs", `{"topic":"rel","body":"x","unique":{"key":"user-42","for":600}}`)
}
