package upgrade

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gmq/gmq/internal/redistest"
	"github.com/gmq/gmq/systemtest/harness"
)

// The plain path (pool/plain.go) raised no store format: a broker that has
// it and an older one without it, on one Redis, each pop and ack what the
// other pushed, and each ack what the other popped, with bodies empty, in
// their records and past them (the bodies hash: over 4 KiB), and leave the
// topic empty, its bytes and the server's current counts at nothing. What
// the older one sets and pauses holds for the newer one's next call.
func TestPlainPathBesideAnOlderBroker(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an older broker")
	}
	t.Parallel()
	old := harness.BuildAt(t, beforeIssue49Commit)
	srv := redistest.Start(t)
	newer, older := harness.StartBroker(t, srv.URL()), harness.StartBrokerOf(t, srv.URL(), old)
	bodies := []string{"", strings.Repeat("x", 100), strings.Repeat("y", 5000)}
	for _, c := range []struct{ pusher, popper, acker *harness.BrokerProc }{
		{older, newer, newer}, {newer, older, older}, {older, newer, older}, {newer, older, newer},
	} {
		for _, body := range bodies {
			pushed := c.pusher.Must(201, "POST", "/api/v1/jobs", fmt.Sprintf(`{"topic":"plain2","body":%q,"priority":7}`, body))
			j := c.popper.Must(200, "GET", "/api/v1/pop?topic=plain2", "")
			if fmt.Sprint(j["id"]) != fmt.Sprint(pushed["id"]) || j["body"] != body || fmt.Sprint(j["priority"]) != "7" {
				t.Fatalf("popped %v (body of %d bytes), want job %v with its body of %d bytes, priority 7", j["id"], len(fmt.Sprint(j["body"])), pushed["id"], len(body))
			}
			c.acker.Must(200, "POST", fmt.Sprintf("/api/v1/jobs/%v/ack", j["id"]), fmt.Sprintf(`{"attempt":%v}`, j["attempt"]))
		}
	}
	for _, b := range []*harness.BrokerProc{newer, older} {
		topic := b.Must(200, "GET", "/api/v1/topics/plain2", "")
		stats := b.Must(200, "GET", "/api/v1/stats", "")
		for name, v := range map[string]any{"ready": topic["ready"], "reserved": topic["reserved"], "bytes": topic["bytes"],
			"the server's ready": stats["current_jobs_ready"], "the server's reserved": stats["current_jobs_reserved"]} {
			if fmt.Sprint(v) != "0" {
				t.Errorf("%s: %v after every job was acked, want 0", name, v)
			}
		}
	}

	// The older broker's settings and pauses hold for the newer one's
	// plain path at its next call; an ack with next, and a TTR 0 job (the
	// plain pop sends it to batch.lua), across the two.
	push := func(p *harness.BrokerProc, topic, extra string) map[string]any {
		t.Helper()
		return p.Must(201, "POST", "/api/v1/jobs", fmt.Sprintf(`{"topic":%q,"body":"x"%s}`, topic, extra))
	}
	ackNext := func(p *harness.BrokerProc, j map[string]any) map[string]any {
		t.Helper()
		return p.Must(200, "POST", fmt.Sprintf("/api/v1/jobs/%v/ack", j["id"]), fmt.Sprintf(`{"attempt":%v,"next":{"topics":["pc"]}}`, j["attempt"]))
	}
	push(older, "pc", "")
	push(newer, "pc", "")
	push(older, "pc", "")
	last := ackNext(newer, ackNext(older, newer.Must(200, "GET", "/api/v1/pop?topic=pc", "")))
	newer.Must(200, "POST", fmt.Sprintf("/api/v1/jobs/%v/ack", last["id"]), fmt.Sprintf(`{"attempt":%v}`, last["attempt"]))
	push(older, "pf", `,"ttr":0`)
	newer.Must(200, "GET", "/api/v1/pop?topic=pf", "")
	push(older, "pd", "")
	older.Must(200, "POST", "/api/v1/topics/pd/pause", `{"seconds":3600}`)
	if a, err := newer.Do("GET", "/api/v1/pop?topic=pd", ""); err != nil || a.Code != 204 {
		t.Fatalf("pop of a topic the older broker paused: %d %v %v, want 204", a.Code, a.Body, err)
	}
	older.Must(200, "POST", "/api/v1/topics/pd/pause", `{"seconds":0}`)
	j := newer.Must(200, "GET", "/api/v1/pop?topic=pd", "")
	older.Must(200, "POST", fmt.Sprintf("/api/v1/jobs/%v/ack", j["id"]), fmt.Sprintf(`{"attempt":%v}`, j["attempt"]))
	push(newer, "pe", "")
	older.Must(200, "PUT", "/api/v1/topics/pe/config", `{"max_items":"1"}`)
	if a, err := newer.Do("POST", "/api/v1/jobs", `{"topic":"pe","body":"y"}`); err != nil || a.Code != 507 {
		t.Fatalf("push past max_items the older broker set: %d %v %v, want 507", a.Code, a.Body, err)
	}
	for _, b := range []*harness.BrokerProc{newer, older} {
		for _, topic := range []string{"pc", "pd", "pf"} {
			ts := b.Must(200, "GET", "/api/v1/topics/"+topic, "")
			for _, k := range []string{"ready", "reserved", "delayed", "buried"} {
				if fmt.Sprint(ts[k]) != "0" {
					t.Errorf("topic %s: %s %v, want 0 (every job acked or taken)", topic, k, ts[k])
				}
			}
		}
	}
}
