package web_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
)

// Waiting for a job's end over HTTP: each way a job ends answers the wait
// at once, with the job when it is kept; a wait that outlasts its timeout
// answers 204; an unknown job 404; a job that ended before the wait began
// is answered from what is kept.
func TestWaitForTheEnd(t *testing.T) {
	b := broker(t)
	api := b.URL + "/api/v1"
	mustCall(t, 200, "PUT", api+"/topics/kept/config", `{"keep_completed": 600, "max_attempts": 1}`)
	type ending struct {
		name, topic string
		end         func(id string, attempt any) // ends the job, reserved by the test
		want        string                       // the state the wait answers
	}
	for _, tc := range []ending{
		{"an ack where it is kept", "kept", func(id string, attempt any) {
			mustCall(t, 200, "POST", api+"/jobs/"+id+"/ack", fmt.Sprintf(`{"attempt":%v,"result":{"pages":7}}`, attempt))
		}, "completed"},
		{"an ack where it is not", "plain", func(id string, attempt any) {
			mustCall(t, 200, "POST", api+"/jobs/"+id+"/ack", fmt.Sprintf(`{"attempt":%v}`, attempt))
		}, "acked"},
		{"a failure past max_attempts", "kept", func(id string, attempt any) {
			mustCall(t, 200, "POST", api+"/jobs/"+id+"/fail", fmt.Sprintf(`{"attempt":%v,"error":"no ink"}`, attempt))
		}, "dead"},
		{"a delete", "plain", func(id string, _ any) { mustCall(t, 200, "DELETE", api+"/jobs/"+id, ``) }, "deleted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pushed := mustCall(t, 201, "POST", api+"/jobs", fmt.Sprintf(`{"topic":%q,"body":"x"}`, tc.topic))
			id := pushed["id"].(string)
			j := mustCall(t, 200, "GET", api+"/pop?topic="+tc.topic, ``)
			answer := make(chan map[string]any, 1)
			go func() {
				code, body := brokertest.Call(t, "GET", api+"/jobs/"+id+"/wait?timeout=30", ``)
				if code != 200 {
					body = map[string]any{"status": code}
				}
				answer <- body
			}()
			waitUntil(t, "the wait under way", func() bool {
				st := mustCall(t, 200, "GET", api+"/stats", ``)
				return st["current_end_waits"] == 1.0
			})
			start := time.Now()
			tc.end(id, j["attempt"])
			select {
			case got := <-answer:
				if got["state"] != tc.want {
					t.Fatalf("the wait answered %v, want state %s", got, tc.want)
				}
				if tc.want == "completed" && fmt.Sprint(got["result"]) != "map[pages:7]" {
					t.Fatalf("the completed job's result: %v", got)
				}
				if tc.want == "dead" && got["last_error"] != "no ink" {
					t.Fatalf("the dead job's error: %v", got)
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("no answer 20 s after the job ended (%v)", time.Since(start))
			}
		})
	}

	// A job that ended before the wait: answered from what is kept.
	got := mustCall(t, 200, "GET", api+"/topics/kept/completed", ``)
	first := got["jobs"].([]any)[0].(map[string]any)["id"].(string)
	if end := mustCall(t, 200, "GET", api+"/jobs/"+first+"/wait?timeout=30", ``); end["state"] != "completed" {
		t.Fatalf("a wait for a completed job: %v", end)
	}
	mustCall(t, 404, "GET", api+"/jobs/no-such-job/wait?timeout=1", ``)
	mustCall(t, 400, "GET", api+"/jobs/1/wait?timeout=soon", ``)

	// Not ended within the timeout: 204, after the whole timeout.
	pushed := mustCall(t, 201, "POST", api+"/jobs", `{"topic":"slow","body":"x"}`)
	start := time.Now()
	if code, _ := brokertest.Call(t, "GET", api+"/jobs/"+pushed["id"].(string)+"/wait?timeout=0.3", ``); code != 204 {
		t.Fatalf("a wait past its timeout: %d, want 204", code)
	}
	if waited := time.Since(start); waited < 300*time.Millisecond {
		t.Fatalf("the wait answered 204 after %v, before its 0.3 s", waited)
	}
}

// A push that waits for its job's end: request and response over the
// queue. A consumer's result comes back as the push's answer; a push whose
// job does not end within its wait answers 202 with the job's id.
func TestPushAndWait(t *testing.T) {
	b := broker(t)
	api := b.URL + "/api/v1"
	mustCall(t, 200, "PUT", api+"/topics/rpc/config", `{"keep_completed": 60}`)
	go func() { // the consumer: doubles the number it is given
		code, j := brokertest.Call(t, "GET", api+"/pop?topic=rpc&timeout=30", ``)
		if code != 200 {
			return
		}
		body := j["body"].(map[string]any)
		brokertest.Call(t, "POST", fmt.Sprintf("%s/jobs/%s/ack", api, j["id"]),
			fmt.Sprintf(`{"attempt":%v,"result":{"double":%v}}`, j["attempt"], body["n"].(float64)*2))
	}()
	got := mustCall(t, 200, "POST", api+"/jobs?wait=30", `{"topic":"rpc","body":{"n":21}}`)
	if got["state"] != "completed" || fmt.Sprint(got["result"]) != "map[double:42]" {
		t.Fatalf("a push that waited: %v, want the consumer's result", got)
	}
	pending := mustCall(t, 202, "POST", api+"/jobs?wait=0.2", `{"topic":"nobody","body":"x"}`)
	if id, _ := pending["id"].(string); id == "" || !strings.ContainsAny(id, "0123456789") {
		t.Fatalf("a push whose job did not end: %v, want its id", pending)
	}
	mustCall(t, 400, "POST", api+"/jobs?wait=-1", `{"topic":"rpc","body":"x"}`)
}

func waitUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not so after 30 s", what)
		}
	}
}
