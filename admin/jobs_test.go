package admin_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gmq/gmq/admin"
	"github.com/gmq/gmq/broker/brokertest"
)

// reserved pushes a job to topic and pops it (attempt 1); it returns the id.
func reserved(t *testing.T, b *brokertest.Broker, topic string) string {
	t.Helper()
	id := brokertest.MustCall(t, 201, "POST", b.URL+"/api/v1/jobs", `{"topic":"`+topic+`","body":"x","ttr":30,"priority":50}`)["id"].(string)
	if got := brokertest.MustCall(t, 200, "GET", b.URL+"/api/v1/pop?topic="+topic, "")["id"]; got != id {
		t.Fatalf("popped %v, want %s", got, id)
	}
	return id
}

// ack, release, bury and touch act on a job taken with pop, each with the
// fields its flags give and no others: against a live broker, the job is
// then where the command says.
func TestAdminJobActions(t *testing.T) {
	b := brokertest.Fresh(t, nil)
	for _, tc := range []struct {
		name  string
		args  []string // after the id
		again bool     // the job is delivered a second time before the command
		code  int
		says  string
		// the job afterwards: its state and priority, or gone (404)
		state    string
		priority float64
	}{
		{name: "ack", says: "acked", state: "gone"},
		{name: "ack", args: []string{"--attempt", "1"}, says: "acked", state: "gone"},
		{name: "ack", args: []string{"--attempt", "1"}, again: true, code: 1, says: "stale delivery", state: "reserved", priority: 50},
		{name: "ack", args: []string{"--attempt", "0"}, again: true, says: "acked", state: "gone"}, // 0: whatever delivery
		{name: "release", says: "ready", state: "ready", priority: 50},
		{name: "release", args: []string{"--delay", "60", "--priority", "7", "--attempt", "1"}, says: "delayed", state: "delayed", priority: 7},
		{name: "release", args: []string{"--delay", "0.5"}, says: "delayed", state: "delayed", priority: 50},
		{name: "release", args: []string{"--attempt", "1"}, again: true, code: 1, says: "409", state: "reserved", priority: 50},
		{name: "bury", says: "buried", state: "buried", priority: 50},
		{name: "bury", args: []string{"--priority", "9", "--attempt", "1"}, says: "buried", state: "buried", priority: 9},
		{name: "touch", args: []string{"--attempt", "1"}, says: "time_left", state: "reserved", priority: 50},
		{name: "touch", args: []string{"--attempt", "2"}, again: true, says: "reserved", state: "reserved", priority: 50},
	} {
		topic := "act-" + tc.name
		id := reserved(t, b, topic)
		if tc.again {
			brokertest.MustCall(t, 200, "POST", b.URL+"/api/v1/jobs/"+id+"/release", `{}`)
			brokertest.MustCall(t, 200, "GET", b.URL+"/api/v1/pop?topic="+topic, "")
		}
		code, out, stderr := gmq(b, tc.name, append([]string{id}, tc.args...)...)
		if code != tc.code || !strings.Contains(out+stderr, tc.says) {
			t.Errorf("gmq %s ID %v: exit %d\n%s%s\nwant %d saying %q", tc.name, tc.args, code, out, stderr, tc.code, tc.says)
		}
		status, job := brokertest.Call(t, "GET", b.URL+"/api/v1/jobs/"+id, "")
		switch {
		case tc.state == "gone" && status != 404:
			t.Errorf("gmq %s ID %v: the job is still there: %v", tc.name, tc.args, job)
		case tc.state != "gone" && (job["state"] != tc.state || job["priority"] != tc.priority):
			t.Errorf("gmq %s ID %v: the job is %v, priority %v; want %s, %v", tc.name, tc.args, job["state"], job["priority"], tc.state, tc.priority)
		}
		brokertest.Call(t, "DELETE", b.URL+"/api/v1/jobs/"+id, "")
	}
}

// --json shows the API's answer to each action.
func TestAdminJobActionsJSON(t *testing.T) {
	b := brokertest.Fresh(t, nil)
	id := reserved(t, b, "j")
	for _, step := range []struct {
		name, key, want string
	}{
		{"touch", "state", "reserved"},
		{"bury", "state", "buried"},
	} {
		code, out, stderr := gmq(b, step.name, id, "--json")
		var answer map[string]any
		if code != 0 || json.Unmarshal([]byte(out), &answer) != nil || answer[step.key] != step.want {
			t.Fatalf("gmq %s --json: %d %s %s", step.name, code, out, stderr)
		}
	}
	brokertest.MustCall(t, 200, "POST", b.URL+"/api/v1/topics/j/kick", `{}`)
	brokertest.MustCall(t, 200, "GET", b.URL+"/api/v1/pop?topic=j", "")
	code, out, _ := gmq(b, "ack", id, "--json")
	if code != 0 || !strings.Contains(out, `"acked": "`+id+`"`) {
		t.Fatalf("gmq ack --json: %d %s", code, out)
	}
	// A job that is not reserved: the broker's reason, exit 1.
	code, _, stderr := gmq(b, "touch", id)
	if code != admin.ExitError || !strings.Contains(stderr, "gmq touch: 404") {
		t.Fatalf("gmq touch on a gone job: %d %s", code, stderr)
	}
}

// update changes a waiting job by its flags, and refuses a reserved one.
func TestAdminUpdate(t *testing.T) {
	b := brokertest.Fresh(t, nil)
	id := brokertest.MustCall(t, 201, "POST", b.URL+"/api/v1/jobs", `{"topic":"up","body":"old","delay":600,"priority":50}`)["id"].(string)
	for _, tc := range []struct {
		args     []string
		code     int
		says     string
		state    string
		priority float64
		body     string
	}{
		{[]string{"--priority", "7"}, 0, "delayed", "delayed", 7, "old"},
		{[]string{"--delay", "0", "--body", "new"}, 0, "ready", "ready", 7, "new"},
		{nil, 2, "give --delay, --priority or --body", "ready", 7, "new"},
		{[]string{"--delay", "-1"}, 2, "--delay -1", "ready", 7, "new"},
	} {
		code, out, stderr := gmq(b, "update", append([]string{id}, tc.args...)...)
		if code != tc.code || !strings.Contains(out+stderr, tc.says) {
			t.Errorf("gmq update ID %v: exit %d\n%s%s\nwant %d saying %q", tc.args, code, out, stderr, tc.code, tc.says)
		}
		job := brokertest.MustCall(t, 200, "GET", b.URL+"/api/v1/jobs/"+id, "")
		if job["state"] != tc.state || job["priority"] != tc.priority || job["body"] != tc.body {
			t.Errorf("gmq update ID %v: the job is %v", tc.args, job)
		}
	}
	brokertest.MustCall(t, 200, "GET", b.URL+"/api/v1/pop?topic=up", "")
	if code, out, stderr := gmq(b, "update", id, "--priority", "1"); code != 1 || !strings.Contains(out+stderr, "409") {
		t.Errorf("gmq update of a reserved job: exit %d\n%s%s", code, out, stderr)
	}
}

// pop --ack takes a job and finishes it in one go (issue 49: each README
// example's plain pop left a reserved job that timed out and counted as a
// failure): it prints the job, which is then gone, and nothing stays
// reserved. An empty topic is still no failure.
func TestAdminPopAck(t *testing.T) {
	b := brokertest.Fresh(t, nil)
	id := brokertest.MustCall(t, 201, "POST", b.URL+"/api/v1/jobs", `{"topic":"pa","body":"hello"}`)["id"].(string)
	code, out, stderr := gmq(b, "pop", "pa", "--ack")
	if code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "hello") || !strings.Contains(out, "acked") {
		t.Fatalf("gmq pop --ack: exit %d\n%s%s", code, out, stderr)
	}
	if status, job := brokertest.Call(t, "GET", b.URL+"/api/v1/jobs/"+id, ""); status != 404 {
		t.Fatalf("after pop --ack the job is still there: %v", job)
	}
	if topic := brokertest.MustCall(t, 200, "GET", b.URL+"/api/v1/topics/pa", ""); topic["reserved"] != 0.0 {
		t.Fatalf("after pop --ack: %v", topic)
	}
	id = brokertest.MustCall(t, 201, "POST", b.URL+"/api/v1/jobs", `{"topic":"pa","body":"again"}`)["id"].(string)
	code, out, _ = gmq(b, "pop", "pa", "--ack", "--json")
	var answer map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &answer) != nil || answer["id"] != id || answer["acked"] != id || answer["body"] != "again" {
		t.Fatalf("gmq pop --ack --json: %d %s", code, out)
	}
	for _, held := range []string{"state", "due", "time_left", "token"} {
		if v, ok := answer[held]; ok {
			t.Errorf("gmq pop --ack shows %s %v of a job no longer reserved", held, v)
		}
	}
	if code, out, stderr := gmq(b, "pop", "pa", "--ack"); code != 0 || !strings.Contains(out, "(no job)") {
		t.Fatalf("gmq pop --ack of an empty topic: %d %s %s", code, out, stderr)
	}
}
