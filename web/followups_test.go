package web_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
)

// An ack may carry follow-ups ("push"): the ack answers their ids, and
// each is pushed once, within moments, where a consumer waiting on its
// topic gets it; a delayed one waits its delay.
func TestAckPushesFollowUps(t *testing.T) {
	b := broker(t)
	api := b.URL + "/api/v1"
	mustCall(t, 201, "POST", api+"/jobs", `{"id":"order-1","topic":"orders","body":{"n":1},"ttr":60}`)
	popped := mustCall(t, 200, "GET", api+"/pop?topic=orders", ``)
	acked := mustCall(t, 200, "POST", api+"/jobs/order-1/ack", fmt.Sprintf(`{"attempt":%v,"push":[
		{"topic":"emails","body":{"to":"ann"}},
		{"topic":"invoices","body":"inv","delay":3600,"priority":5}]}`, popped["attempt"]))
	ids, _ := acked["pushed"].([]any)
	if acked["acked"] != "order-1" || len(ids) != 2 || acked["again"] != nil {
		t.Fatalf("ack with follow-ups: %v", acked)
	}
	email := mustCall(t, 200, "GET", api+"/pop?topic=emails&timeout=30", ``) // the timer pushes it at once; 30 s only for a machine that stalls
	if email["id"] != ids[0] || fmt.Sprint(email["body"]) != "map[to:ann]" {
		t.Fatalf("the follow-up popped: %v, want id %v", email, ids[0])
	}
	invoice := mustCall(t, 200, "GET", api+"/jobs/"+ids[1].(string), ``)
	if invoice["state"] != "delayed" || invoice["priority"] != 5.0 {
		t.Fatalf("the delayed follow-up: %v", invoice)
	}
	mustCall(t, 404, "GET", api+"/jobs/order-1", ``)
}

// What an ack with follow-ups refuses, whole (the job stays reserved, and
// no follow-up is made): a bad follow-up, a unique or named one, one with
// next, a stale delivery.
func TestAckFollowUpsRefused(t *testing.T) {
	b := broker(t)
	api := b.URL + "/api/v1"
	mustCall(t, 201, "POST", api+"/jobs", `{"id":"r-1","topic":"r","body":"x","ttr":60}`)
	mustCall(t, 200, "GET", api+"/pop?topic=r", ``)
	for _, tc := range []struct {
		body string
		code int
		says string
	}{
		{`{"push":[]}`, 400, "an array of 1 to 100"},
		{`{"push":{"topic":"x"}}`, 400, "an array"},
		{`{"push":[{"topic":"x"}]}`, 400, "body"},
		{`{"push":[{"topic":"x","body":"y","colour":"red"}]}`, 400, "colour"},
		{`{"push":[{"topic":"x","body":"y","unique":{"key":"k","for":60}}]}`, 400, "cannot be unique"},
		{`{"push":[{"id":"mine","topic":"x","body":"y"}]}`, 400, "cannot carry an id"},
		{`{"push":[{"topic":"x","body":"` + strings.Repeat("b", 2000) + `"}]}`, 413, "too big"},
		{`{"push":[{"topic":"x","body":"y"}],"next":{"topics":["r"]}}`, 400, "cannot pop the next job"},
		{`{"attempt":7,"push":[{"topic":"x","body":"y"}]}`, 409, "stale"},
	} {
		code, out := call(t, "POST", api+"/jobs/r-1/ack", tc.body)
		if msg, _ := out["error"].(string); code != tc.code || !strings.Contains(msg, tc.says) {
			t.Errorf("ack %s: %d %v, want %d saying %q", tc.body, code, out, tc.code, tc.says)
		}
	}
	if j := mustCall(t, 200, "GET", api+"/jobs/r-1", ``); j["state"] != "reserved" {
		t.Fatalf("after the refused acks: %v, want it reserved still", j)
	}
	if code, st := call(t, "GET", api+"/topics/x", ``); code != 404 {
		t.Fatalf("a refused ack made a follow-up: %d %v", code, st)
	}
}

// A batch ack's items may carry follow-ups too: each acked item's are
// answered under its id, a refused item's are not made.
func TestBatchAckPushesFollowUps(t *testing.T) {
	b := broker(t)
	api := b.URL + "/api/v1"
	for _, id := range []string{"m-1", "m-2"} {
		mustCall(t, 201, "POST", api+"/jobs", `{"id":"`+id+`","topic":"m","body":"x","ttr":60}`)
	}
	mustCall(t, 200, "POST", api+"/pop", `{"topics":["m"],"count":2}`)
	out := mustCall(t, 200, "POST", api+"/ack", `{"jobs":[
		{"id":"m-1","push":[{"topic":"m-next","body":"after 1"}]},
		{"id":"m-2","attempt":9,"push":[{"topic":"m-next","body":"after a stale 2"}]}]}`)
	pushed, _ := out["pushed"].(map[string]any)
	ids, _ := pushed["m-1"].([]any)
	if len(ids) != 1 || pushed["m-2"] != nil || len(out["failed"].([]any)) != 1 {
		t.Fatalf("batch ack: %v", out)
	}
	next := mustCall(t, 200, "GET", api+"/pop?topic=m-next&timeout=30", ``)
	if next["id"] != ids[0] || next["body"] != "after 1" {
		t.Fatalf("the follow-up: %v, want %v", next, ids[0])
	}
	if code, _ := call(t, "GET", api+"/pop?topic=m-next&timeout=0", ``); code != 204 {
		t.Fatalf("a second follow-up in m-next: %d, want none (the stale ack's)", code)
	}
}

// A job pushed with then is followed up when its ack completes it; one
// pushed with on_dead when it dies. Bad follow-ups refuse the push.
func TestPushWithThenAndOnDead(t *testing.T) {
	b := broker(t)
	api := b.URL + "/api/v1"
	mustCall(t, 200, "PUT", api+"/topics/th-once/config", `{"max_attempts":1}`)
	mustCall(t, 201, "POST", api+"/jobs", `{"id":"th-1","topic":"th","body":"x","ttr":60,
		"then":[{"topic":"th-next","body":"done","then":[{"topic":"th-next","body":"and after"}]}],
		"on_dead":[{"topic":"th-grave","body":"never"}]}`)
	view := mustCall(t, 200, "GET", api+"/jobs/th-1", ``)
	then, _ := view["then"].([]any)
	if len(then) != 1 || len(view["on_dead"].([]any)) != 1 {
		t.Fatalf("the job's view: %v, want one then and one on_dead id", view)
	}
	mustCall(t, 200, "GET", api+"/pop?topic=th", ``)
	mustCall(t, 200, "POST", api+"/jobs/th-1/ack", ``)
	for i, want := range []string{"done", "and after"} {
		got := mustCall(t, 200, "GET", api+"/pop?topic=th-next&timeout=30", ``)
		if got["body"] != want || (i == 0 && got["id"] != then[0]) {
			t.Fatalf("then: %v, want %q (id %v)", got, want, then[0])
		}
		mustCall(t, 200, "POST", api+"/jobs/"+got["id"].(string)+"/ack", ``)
	}
	mustCall(t, 201, "POST", api+"/jobs", `{"id":"th-2","topic":"th-once","body":"x","on_dead":[{"topic":"th-grave","body":"it died"}]}`)
	mustCall(t, 200, "GET", api+"/pop?topic=th-once", ``)
	mustCall(t, 200, "POST", api+"/jobs/th-2/fail", `{"error":"boom"}`)
	if got := mustCall(t, 200, "GET", api+"/pop?topic=th-grave&timeout=30", ``); got["body"] != "it died" {
		t.Fatalf("on_dead: %v", got)
	}
	deep := `{"topic":"d","body":"x"}`
	for range 9 {
		deep = `{"topic":"d","body":"x","then":[` + deep + `]}`
	}
	for _, tc := range []struct {
		body string
		says string
	}{
		{`{"topic":"th","body":"x","then":[]}`, "then: want an array of 1 to 100"},
		{`{"topic":"th","body":"x","then":[{"topic":"y"}]}`, "then: job 0"},
		{`{"topic":"th","body":"x","on_dead":[{"topic":"y","body":"z","unique":{"key":"k","for":60}}]}`, "cannot be unique"},
		{`{"topic":"th","body":"x","then":[{"id":"mine","topic":"y","body":"z"}]}`, "cannot carry an id"},
		{deep, "nested more than 8 deep"},
	} {
		code, out := call(t, "POST", api+"/jobs", tc.body)
		if msg, _ := out["error"].(string); code != 400 || !strings.Contains(msg, tc.says) {
			t.Errorf("push %s: %d %v, want 400 saying %q", tc.body, code, out, tc.says)
		}
	}
}

// with_result: a follow-up of a completion takes the finished job's
// result in its body; a job pushed, or an on_dead, cannot ask for it.
func TestFollowUpWithResultOverHTTP(t *testing.T) {
	b := broker(t)
	api := b.URL + "/api/v1"
	mustCall(t, 201, "POST", api+"/jobs", `{"id":"wr-1","topic":"wr","body":"x","ttr":60}`)
	mustCall(t, 200, "GET", api+"/pop?topic=wr", ``)
	mustCall(t, 200, "POST", api+"/jobs/wr-1/ack", `{"result":{"rows":7},"push":[{"topic":"wr-next","body":{"report":1},"with_result":true}]}`)
	got := mustCall(t, 200, "GET", api+"/pop?topic=wr-next&timeout=30", ``)
	if fmt.Sprint(got["body"]) != "map[body:map[report:1] result:map[rows:7]]" {
		t.Fatalf("the follow-up's body: %v", got["body"])
	}
	for _, tc := range []struct{ body, says string }{
		{`{"topic":"wr","body":"x","with_result":true}`, "with_result is a follow-up's"},
		{`{"topic":"wr","body":"x","on_dead":[{"topic":"y","body":"z","with_result":true}]}`, "a job that died has no result"},
		{`{"topic":"wr","body":"x","then":[{"topic":"y","body":"z","with_result":"yes"}]}`, "with_result must be true or false"},
	} {
		code, out := call(t, "POST", api+"/jobs", tc.body)
		if msg, _ := out["error"].(string); code != 400 || !strings.Contains(msg, tc.says) {
			t.Errorf("push %s: %d %v, want 400 saying %q", tc.body, code, out, tc.says)
		}
	}
}

// An ack's follow-up to an alias is a copy for each of its destinations,
// answered by the first copy's id; a job's own follow-up cannot name one.
func TestFollowUpToAnAlias(t *testing.T) {
	b := brokertest.Fresh(t, func(c *config.Config) { c.Aliases = map[string][]string{"fu-all": {"fu-a", "fu-b"}} })
	api := b.URL + "/api/v1"
	mustCall(t, 201, "POST", api+"/jobs", `{"id":"al-1","topic":"al","body":"x","ttr":60}`)
	mustCall(t, 200, "GET", api+"/pop?topic=al", ``)
	out := mustCall(t, 200, "POST", api+"/jobs/al-1/ack", `{"push":[{"topic":"fu-all","body":"to both"}]}`)
	ids, _ := out["pushed"].([]any)
	first := mustCall(t, 200, "GET", api+"/pop?topic=fu-a&timeout=30", ``)
	second := mustCall(t, 200, "GET", api+"/pop?topic=fu-b&timeout=30", ``)
	if len(ids) != 1 || first["id"] != ids[0] || first["body"] != "to both" || second["body"] != "to both" {
		t.Fatalf("an alias's follow-up: %v, then %v and %v", out, first, second)
	}
	code, got := call(t, "POST", api+"/jobs", `{"topic":"al","body":"x","then":[{"topic":"fu-all","body":"y"}]}`)
	if msg, _ := got["error"].(string); code != 400 || !strings.Contains(msg, "is an alias") {
		t.Fatalf("a then to an alias: %d %v", code, got)
	}
}

// What an attack on follow-ups found, each as it holds now: a follow-up to
// a fanout parent reaches it and its children; with_result's body is as
// long as its parts (nothing escaped that need not be), and one over
// max_body is refused with the ack; a producer cannot take a follow-up's
// key; an ack retried on a completed job by another delivery is stale; a
// batch ack with follow-ups pops no next jobs.
func TestFollowUpsAttacked(t *testing.T) {
	b := broker(t) // max_body 1024
	api := b.URL + "/api/v1"
	mustCall(t, 200, "GET", api+"/topics/fp+c/config", ``) // a fanout child of fp
	mustCall(t, 201, "POST", api+"/jobs", `{"id":"at-1","topic":"at","body":"x","ttr":60}`)
	mustCall(t, 200, "GET", api+"/pop?topic=at", ``)
	mustCall(t, 200, "POST", api+"/jobs/at-1/ack", `{"push":[{"topic":"fp","body":"to the parent"}]}`)
	for _, topic := range []string{"fp", "fp+c"} {
		if got := mustCall(t, 200, "GET", api+"/pop?topic="+strings.ReplaceAll(topic, "+", "%2B")+"&timeout=30", ``); got["body"] != "to the parent" {
			t.Fatalf("%s: %v", topic, got)
		}
	}

	mustCall(t, 201, "POST", api+"/jobs", `{"id":"at-2","topic":"at","body":"x","ttr":60}`)
	mustCall(t, 200, "GET", api+"/pop?topic=at", ``)
	lt := strings.Repeat("<", 600)
	code, out := call(t, "POST", api+"/jobs/at-2/ack", `{"result":"`+lt+`","push":[{"topic":"at-r","body":"`+lt+`","with_result":true}]}`)
	if msg, _ := out["error"].(string); code != 413 || !strings.Contains(msg, "over max_body") {
		t.Fatalf("with_result over max_body: %d %v", code, out)
	}
	mustCall(t, 200, "POST", api+"/jobs/at-2/ack", `{"result":"<>&","push":[{"topic":"at-r","body":"`+lt+`","with_result":true}]}`)
	got := mustCall(t, 200, "GET", api+"/topics/at-r", ``)
	if want := float64(len(`{"body":"` + lt + `","result":"<>&"}`)); got["bytes"] != want {
		t.Fatalf("the with_result body: %v bytes, want %v", got["bytes"], want)
	}

	code, out = call(t, "POST", api+"/jobs", `{"topic":"at","body":"y","unique":{"key":"gmq follow-up 12345","for":60}}`)
	if msg, _ := out["error"].(string); code != 400 || !strings.Contains(msg, "gmq's own") {
		t.Fatalf("a producer's key in the follow-ups' space: %d %v", code, out)
	}

	mustCall(t, 200, "PUT", api+"/topics/kc/config", `{"keep_completed":600}`)
	mustCall(t, 201, "POST", api+"/jobs", `{"id":"kc-1","topic":"kc","body":"x","ttr":60}`)
	mustCall(t, 200, "GET", api+"/pop?topic=kc", ``)
	mustCall(t, 200, "POST", api+"/jobs/kc-1/ack", `{"attempt":1,"push":[{"topic":"kc-next","body":"once"}]}`)
	if again := mustCall(t, 200, "POST", api+"/jobs/kc-1/ack", `{"attempt":1,"push":[{"topic":"kc-next","body":"once"}]}`); again["again"] != true {
		t.Fatalf("the same delivery's ack again: %v", again)
	}
	mustCall(t, 409, "POST", api+"/jobs/kc-1/ack", `{"attempt":7,"push":[{"topic":"kc-next","body":"once"}]}`)

	code, out = call(t, "POST", api+"/ack", `{"jobs":[{"id":"kc-1","push":[{"topic":"x","body":"y"}]}],"next":{"topics":["at"]}}`)
	if msg, _ := out["error"].(string); code != 400 || !strings.Contains(msg, "cannot pop the next jobs") {
		t.Fatalf("a batch ack with follow-ups and next: %d %v", code, out)
	}
}
