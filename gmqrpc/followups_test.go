package gmqrpc_test

import (
	"strings"
	"testing"

	"github.com/gmq/gmq/broker/brokertest"
)

// Service.Ack may carry follow-ups ("push"), each a job as Service.Push
// takes it: the answer names their ids, and each is pushed once. A bad one
// refuses the ack whole.
func TestAckPushesFollowUpsOverRPC(t *testing.T) {
	b := brokertest.Fresh(t, nil)
	c := dialRPC(t, b.RPCAddr)
	var reply string
	if err := c.Call("Service.Push", map[string]string{"id": "f_1", "topic": "f", "body": "x", "TTR": "60"}, &reply); err != nil {
		t.Fatal(err)
	}
	var popped map[string]string
	if err := c.Call("Service.Pop", []string{"f"}, &popped); err != nil || popped["id"] != "f_1" {
		t.Fatalf("pop: %v %v", popped, err)
	}
	var bad any
	err := c.Call("Service.Ack", map[string]any{"id": "f_1", "push": []any{map[string]any{"topic": "f-next"}}}, &bad)
	if err == nil || !strings.HasPrefix(err.Error(), "invalid: ") || !strings.Contains(err.Error(), "push: job 0") {
		t.Fatalf("an ack with a follow-up that has no body: %v %v", bad, err)
	}
	var acked struct {
		Acked  string   `json:"acked"`
		Pushed []string `json:"pushed"`
	}
	err = c.Call("Service.Ack", map[string]any{"id": "f_1", "attempt": 1, "push": []any{
		map[string]any{"topic": "f-next", "body": map[string]any{"step": 2}, "TTR": "30"}}}, &acked)
	if err != nil || acked.Acked != "f_1" || len(acked.Pushed) != 1 {
		t.Fatalf("ack with a follow-up: %+v %v", acked, err)
	}
	next := brokertest.MustCall(t, 200, "GET", b.URL+"/api/v1/pop?topic=f-next&timeout=30", ``)
	if next["id"] != acked.Pushed[0] {
		t.Fatalf("the follow-up: %v, want id %s", next, acked.Pushed[0])
	}
	if err := c.Call("Service.Ack", "f_1", &reply); err == nil || !strings.HasPrefix(err.Error(), "not_found: ") {
		t.Fatalf("the job acked again: %q %v", reply, err)
	}
}
