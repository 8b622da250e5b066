package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gmq/gmq/internal/redistest"
)

// The plain path (pool/plain.go) raised no store format: a broker that has
// it and an older one without it, on one Redis, each pop and ack what the
// other pushed, and each ack what the other popped, with bodies empty, in
// their records and past them (the bodies hash: over 4 KiB), and leave the
// topic empty, its bytes and the server's current counts at nothing.
func TestPlainPathBesideAnOlderBroker(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an older broker")
	}
	t.Parallel()
	old := buildAt(t, beforeIssue49Commit)
	srv := redistest.Start(t)
	newer, older := startBroker(t, srv.URL()), startBrokerOf(t, srv.URL(), old)
	bodies := []string{"", strings.Repeat("x", 100), strings.Repeat("y", 5000)}
	for _, c := range []struct{ pusher, popper, acker *brokerProc }{
		{older, newer, newer}, {newer, older, older}, {older, newer, older}, {newer, older, newer},
	} {
		for _, body := range bodies {
			pushed := c.pusher.must(201, "POST", "/api/v1/jobs", fmt.Sprintf(`{"topic":"plain2","body":%q,"priority":7}`, body))
			j := c.popper.must(200, "GET", "/api/v1/pop?topic=plain2", "")
			if fmt.Sprint(j["id"]) != fmt.Sprint(pushed["id"]) || j["body"] != body || fmt.Sprint(j["priority"]) != "7" {
				t.Fatalf("popped %v (body of %d bytes), want job %v with its body of %d bytes, priority 7", j["id"], len(fmt.Sprint(j["body"])), pushed["id"], len(body))
			}
			c.acker.must(200, "POST", fmt.Sprintf("/api/v1/jobs/%v/ack", j["id"]), fmt.Sprintf(`{"attempt":%v}`, j["attempt"]))
		}
	}
	for _, b := range []*brokerProc{newer, older} {
		topic := b.must(200, "GET", "/api/v1/topics/plain2", "")
		stats := b.must(200, "GET", "/api/v1/stats", "")
		for name, v := range map[string]any{"ready": topic["ready"], "reserved": topic["reserved"], "bytes": topic["bytes"],
			"the server's ready": stats["current_jobs_ready"], "the server's reserved": stats["current_jobs_reserved"]} {
			if fmt.Sprint(v) != "0" {
				t.Errorf("%s: %v after every job was acked, want 0", name, v)
			}
		}
	}
}
