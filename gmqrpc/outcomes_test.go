package gmqrpc_test

import (
	"strings"
	"testing"

	"github.com/gmq/gmq/broker/brokertest"
)

// Outcomes over JSON-RPC: an ack with a result kept where its topic keeps
// completed jobs (its answer says for how long: the topic's keep_completed,
// which wins over keep_results); progress; a cancel of a held job, which the consumer's
// next progress learns ("cancelled: "), and of a waiting one.
func TestOutcomesOverRPC(t *testing.T) {
	b := brokertest.Fresh(t, nil)
	brokertest.MustCall(t, 200, "PUT", b.URL+"/api/v1/topics/out/config", `{"keep_completed": 600}`)
	c := dialRPC(t, b.RPCAddr)
	var reply string
	for _, id := range []string{"out_1", "out_2", "out_3"} {
		if err := c.Call("Service.Push", map[string]string{"id": id, "topic": "out", "body": "x"}, &reply); err != nil {
			t.Fatal(err)
		}
	}
	var popped map[string]string
	if err := c.Call("Service.Pop", []string{"out"}, &popped); err != nil || popped["id"] != "out_1" {
		t.Fatalf("pop: %v %v", popped, err)
	}
	if err := c.Call("Service.Progress", map[string]any{"id": "out_1", "attempt": 1, "progress": 50, "log": "half"}, &reply); err != nil || reply != "success" {
		t.Fatalf("progress: %q %v", reply, err)
	}
	var acked map[string]any
	if err := c.Call("Service.Ack", map[string]any{"id": "out_1", "attempt": 1, "result": map[string]any{"rows": 7}}, &acked); err != nil {
		t.Fatal(err)
	}
	if acked["acked"] != "out_1" || acked["kept_for"] != 600.0 {
		t.Fatalf("the ack's answer: %v, want out_1 kept for 600 s", acked)
	}
	got := brokertest.MustCall(t, 200, "GET", b.URL+"/api/v1/jobs/out_1", ``)
	if got["state"] != "completed" || got["progress"] != 50.0 {
		t.Fatalf("the acked job: %v", got)
	}
	if err := c.Call("Service.Pop", []string{"out"}, &popped); err != nil || popped["id"] != "out_2" {
		t.Fatalf("pop: %v %v", popped, err)
	}
	if err := c.Call("Service.Cancel", "out_2", &reply); err != nil || reply != "cancelling" {
		t.Fatalf("cancel a held job: %q %v", reply, err)
	}
	if err := c.Call("Service.Progress", map[string]any{"id": "out_2", "attempt": 1}, &reply); err == nil || !strings.HasPrefix(err.Error(), "cancelled: ") {
		t.Fatalf("the consumer's next progress: %v, want cancelled", err)
	}
	if err := c.Call("Service.Cancel", "out_3", &reply); err != nil || reply != "cancelled" {
		t.Fatalf("cancel a waiting job: %q %v", reply, err)
	}
	if err := c.Call("Service.Cancel", "out_3", &reply); err == nil || !strings.HasPrefix(err.Error(), "conflict: ") {
		t.Fatalf("cancel an ended job: %v, want a conflict", err)
	}
	if err := c.Call("Service.Progress", map[string]any{"id": "out_3", "colour": "red"}, &reply); err == nil || !strings.Contains(err.Error(), "colour") {
		t.Fatalf("an unknown field: %v", err)
	}
}
