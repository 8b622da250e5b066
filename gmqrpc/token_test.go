package gmqrpc_test

import (
	"strings"
	"testing"

	"github.com/gmq/gmq/broker/brokertest"
)

// A pop's token reaches its delivery, and only it: Ack and Fail given a
// token act on the job it names, refuse another job's, and a token-less
// Ack (a string param) works as gmq's always did.
func TestTokens(t *testing.T) {
	b := brokertest.Fresh(t, nil)
	c := dialRPC(t, b.RPCAddr)
	var reply string
	push := func(id string) {
		t.Helper()
		if err := c.Call("Service.Push", map[string]any{"id": id, "topic": "tok", "body": "x", "retry": map[string]any{"max_attempts": 1}}, &reply); err != nil {
			t.Fatalf("push %s: %v", id, err)
		}
	}
	pop := func(want string) map[string]string {
		t.Helper()
		var job map[string]string
		if err := c.Call("Service.Pop", []string{"tok"}, &job); err != nil || job["id"] != want || job["attempt"] != "1" {
			t.Fatalf("pop: %v %v, want %s at attempt 1", job, err, want)
		}
		if !strings.HasSuffix(job["token"], ".1") || len(job["token"]) < 3 {
			t.Fatalf("pop: token %q, want <number>.1", job["token"])
		}
		return job
	}
	push("t_1")
	push("t_2")
	one, two := pop("t_1"), pop("t_2")

	for _, tc := range []struct {
		args any
		says string
	}{
		{map[string]any{"id": "t_1", "token": two["token"]}, "another job"},           // t_2's token
		{map[string]any{"id": "t_1", "token": one["token"], "attempt": 2}, "attempt"}, // disagrees
		{map[string]any{"id": "t_1", "token": "1.0"}, "token"},                        // malformed
		{map[string]any{"id": "t_1", "tokn": one["token"]}, "tokn"},                   // unknown field
	} {
		if err := c.Call("Service.Ack", tc.args, &reply); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("ack %v: %v, want an error saying %q", tc.args, err, tc.says)
		}
	}
	if err := c.Call("Service.Ack", map[string]any{"id": "t_1", "token": one["token"]}, &reply); err != nil || reply != "success" {
		t.Fatalf("ack with its token: %q %v", reply, err)
	}
	if err := c.Call("Service.Ack", map[string]any{"id": "t_1", "token": one["token"]}, &reply); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("a second ack with the token: %v, want not found", err)
	}
	if err := c.Call("Service.Fail", map[string]any{"id": "t_2", "token": one["token"], "error": "x"}, &reply); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("fail with a gone job's token: %v, want not found", err)
	}
	if err := c.Call("Service.Fail", map[string]any{"id": "t_2", "token": two["token"], "error": "x"}, &reply); err != nil || reply != "dead" {
		t.Fatalf("fail with its token: %q %v", reply, err)
	}
	push("t_3")
	pop("t_3")
	if err := c.Call("Service.Ack", "t_3", &reply); err != nil || reply != "success" {
		t.Fatalf("a token-less ack: %q %v", reply, err)
	}
}
