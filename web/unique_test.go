package web_test

import (
	"strings"
	"testing"
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
