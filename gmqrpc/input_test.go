package gmqrpc_test

import (
	"strings"
	"testing"

	"github.com/gmq/gmq/broker/brokertest"
)

// A misspelt field of Service.Push is refused, named, not ignored (issue
// 20): {"dealy": 5} used to store a job that ran at once. The original gmq's
// fields, in any case, still push.
func TestPushRefusesUnknownFields(t *testing.T) {
	b := brokertest.Fresh(t, nil)
	c := dialRPC(t, b.RPCAddr)
	var reply string
	err := c.Call("Service.Push", map[string]any{"topic": "u", "body": "x", "dealy": "5"}, &reply)
	if err == nil || !strings.Contains(err.Error(), `unknown field "dealy"`) {
		t.Fatalf("push with dealy: %q %v, want it refused by name", reply, err)
	}
	legacy := map[string]string{"id": "legacy_1", "topic": "u", "body": "x", "delay": "0", "TTR": "30"}
	if err := c.Call("Service.Push", legacy, &reply); err != nil || reply != "success" {
		t.Fatalf("the original gmq's push: %q %v", reply, err)
	}
	upper := map[string]any{"ID": "legacy_2", "Topic": "u", "Body": "x", "Delay": 0, "ttr": 5, "Priority": 3, "PRI": 4}
	if err := c.Call("Service.Push", upper, &reply); err == nil || !strings.Contains(err.Error(), "priority or pri, not both") {
		t.Fatalf("priority and pri together: %v, want them refused", err)
	}
	delete(upper, "PRI")
	if err := c.Call("Service.Push", upper, &reply); err != nil {
		t.Fatalf("fields in other cases: %v", err)
	}
}

// Service.Fail refuses a misspelt field by name too ({"reason": ...} used
// to fail the job with no error text), and reads names in any case.
func TestFailRefusesUnknownFields(t *testing.T) {
	b := brokertest.Fresh(t, nil)
	c := dialRPC(t, b.RPCAddr)
	var reply string
	push := map[string]any{"id": "fail_1", "topic": "f", "body": "x", "retry": map[string]any{"max_attempts": 1}}
	if err := c.Call("Service.Push", push, &reply); err != nil {
		t.Fatal(err)
	}
	var job map[string]string
	if err := c.Call("Service.Pop", []string{"f"}, &job); err != nil {
		t.Fatal(err)
	}
	err := c.Call("Service.Fail", map[string]any{"id": "fail_1", "reason": "broken"}, &reply)
	if err == nil || !strings.Contains(err.Error(), `unknown field "reason"`) {
		t.Fatalf("fail with reason: %q %v, want it refused by name", reply, err)
	}
	if err := c.Call("Service.Fail", map[string]any{"ID": "fail_1", "Attempt": 1, "Error": "broken"}, &reply); err != nil || reply != "dead" {
		t.Fatalf("fail in other cases: %q %v", reply, err)
	}
}

// A call on one job that meets an expected outcome is answered with the
// client's verb and id, not the store's: an ack of "order-42" used to be
// told "delete job 40: ...".
func TestErrorsInTheClientsTerms(t *testing.T) {
	b := brokertest.Fresh(t, nil)
	c := dialRPC(t, b.RPCAddr)
	var reply string
	if err := c.Call("Service.Push", map[string]any{"id": "order-42", "topic": "o", "body": "x"}, &reply); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		method string
		args   any
		want   string
	}{
		{"Service.Ack", "order-41", `not_found: ack "order-41": not found`},
		{"Service.Fail", map[string]any{"id": "order-42", "error": "e"}, `conflict: fail "order-42": the job is ready`},
		{"Service.Fail", map[string]any{"id": "order-41", "error": "e"}, `not_found: fail "order-41": not found`},
		{"Service.Ack", map[string]any{"id": "order-42", "attempt": 1},
			`conflict: ack "order-42": the job is still ready and was never delivered (no attempt 1 to act on)`},
		{"Service.Ack", map[string]any{}, `invalid: bad request: id is missing`}, // not a job that is not found
		{"Service.Fail", map[string]any{"error": "e"}, `invalid: bad request: id is missing`},
	} {
		if err := c.Call(tt.method, tt.args, &reply); err == nil || err.Error() != tt.want {
			t.Errorf("%s %v: %v, want %q", tt.method, tt.args, err, tt.want)
		}
	}
	var popped map[string]string
	if err := c.Call("Service.Pop", []string{"o"}, &popped); err != nil {
		t.Fatal(err)
	}
	if err := c.Call("Service.Fail", map[string]any{"id": "order-42", "attempt": 2, "error": "e"}, &reply); err == nil ||
		err.Error() != `conflict: fail "order-42": stale delivery: attempt 2, the job is on attempt 1` {
		t.Errorf("a fail of another delivery: %v", err)
	}
}
