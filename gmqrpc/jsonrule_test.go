package gmqrpc_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gmq/gmq/broker/brokertest"
)

// Every JSON value the broker keeps must read back as it was sent in every
// client (issue 49): over JSON-RPC too, a lone surrogate, bytes that are not
// UTF-8 or a number past a double is refused as "invalid", naming its path,
// and the call changes nothing.
func TestJSONReadersCannotTakeBackRefusedOverRPC(t *testing.T) {
	b := brokertest.Fresh(t, nil)
	c := dialRPC(t, b.RPCAddr)
	var reply any
	if err := c.Call("Service.Push", map[string]any{"id": "rule_w", "topic": "rule", "body": "x", "delay": 3600}, &reply); err != nil {
		t.Fatal(err)
	}
	if err := c.Call("Service.Push", map[string]any{"id": "rule_h", "topic": "rule-held", "body": "x", "TTR": 600}, &reply); err != nil {
		t.Fatal(err)
	}
	var held map[string]any
	if err := c.Call("Service.Pop", []string{"rule-held"}, &held); err != nil || held["id"] != "rule_h" {
		t.Fatalf("pop: %v %v", held, err)
	}
	tests := []struct {
		name, method, args string // args: the call's argument as raw JSON
		says               string
	}{
		{"a push's lone surrogate", "Service.Push", `{"topic":"rule","body":{"s":"\ud800"}}`, `invalid: bad request: body.s: lone surrogate \ud800`},
		{"a push's string body", "Service.Push", `{"topic":"rule","body":"\udc00"}`, `body: lone surrogate \udc00`},
		{"a push's 1e400", "Service.Push", `{"topic":"rule","body":[1e400]}`, `body[0]: number 1e400 out of range`},
		{"a push's bytes not UTF-8", "Service.Push", "{\"topic\":\"rule\",\"body\":\"\xff\"}", `body: not valid UTF-8`},
		{"a follow-up's body", "Service.Push", `{"topic":"rule","body":"x","then":[{"topic":"rule","body":{"n":-1e400}}]}`, `then[0].body.n: number -1e400 out of range`},
		{"an update's body", "Service.Update", `{"id":"rule_w","body":{"s":"\ud800"}}`, `body.s: lone surrogate`},
		{"an ack's result", "Service.Ack", `{"id":"rule_h","result":{"items":[1,2,3,1e400]}}`, `result.items[3]: number 1e400 out of range`},
		{"an ack's follow-up", "Service.Ack", `{"id":"rule_h","push":[{"topic":"rule","body":"\ud800"}]}`, `push[0].body: lone surrogate`},
		{"a fail's error", "Service.Fail", `{"id":"rule_h","error":"\ud800"}`, `error: lone surrogate`},
		{"a progress", "Service.Progress", `{"id":"rule_h","progress":{"p":1e400}}`, `progress.p: number 1e400 out of range`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var reply any
			err := c.Call(tt.method, json.RawMessage(tt.args), &reply)
			if err == nil || !strings.HasPrefix(err.Error(), "invalid: ") || !strings.Contains(err.Error(), tt.says) {
				t.Fatalf("%s %s: %v %v, want an invalid error saying %q", tt.method, tt.args, reply, err, tt.says)
			}
		})
	}
	// Nothing changed: the waiting job keeps its body, the held job is still held.
	mustHTTP := func(path string) map[string]any {
		return brokertest.MustCall(t, 200, "GET", b.URL+"/api/v1"+path, ``)
	}
	if j := mustHTTP("/jobs/rule_w"); j["body"] != "x" {
		t.Errorf("the waiting job: %v", j)
	}
	if j := mustHTTP("/jobs/rule_h"); j["state"] != "reserved" || j["failures"] != 0.0 {
		t.Errorf("the held job: %v", j)
	}
	if st := mustHTTP("/topics/rule"); st["total_jobs"] != 1.0 {
		t.Errorf("the topic took %v jobs, want the first alone", st["total_jobs"])
	}
}
