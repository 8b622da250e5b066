package main

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/internal/redistest"
)

// The grace of these tests: long enough that a loaded machine takes the
// steps meant to come before its end before it (each such step checks that
// it did, and says so otherwise), short enough to wait out.
const testGrace = 4 * time.Second

// statusOf reads a broker's GET /api/v1/status.
func statusOf(t *testing.T, b *brokerProc) map[string]any {
	t.Helper()
	return b.must(200, "GET", "/api/v1/status", "")
}

func (b *brokerProc) ready() int {
	a, err := b.do("GET", "/readyz", "")
	if err != nil {
		return 0
	}
	return a.code
}

func (b *brokerProc) pushCode(topic string) int {
	a, err := b.do("POST", "/api/v1/jobs", `{"topic":"`+topic+`","body":"x"}`)
	if err != nil {
		return 0
	}
	return a.code
}

// memcacheStatus is kestrel's memcache status line on the broker's port.
func (b *brokerProc) memcacheStatus(t *testing.T) string {
	t.Helper()
	return strings.TrimSpace(brokertest.Lines(t, b.kestrel, "status\r\n", 1)[0])
}

// A stricter status set through one broker with [server] status_grace is
// announced at once by both brokers (the API, kestrel's status) and
// enforced by both from the same instant, on Redis's clock; a looser one
// applies at once; a broker's own status reaches only it, and /readyz
// turns away from a broker that announces quiescent before it refuses.
func TestStatusGraceAcrossBrokers(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	conf := "[server]\nstatus_grace = " + testGrace.String() + "\n"
	a := startBrokerWith(t, srv.URL(), "", conf)
	b := startBrokerWith(t, srv.URL(), "", conf)

	set := a.must(200, "PUT", "/api/v1/status", `{"status":"readonly"}`)
	sent := time.Now()
	at, err := time.Parse(time.RFC3339Nano, text(set["enforced_at"]))
	if set["status"] != "readonly" || set["enforced"] != "up" || err != nil {
		t.Fatalf("a stricter status with a grace: %v (enforced_at: %v)", set, err)
	}
	if d := at.Sub(sent); d < testGrace-time.Second || d > testGrace+time.Second {
		t.Fatalf("enforced at %v, %v after it was set; the grace is %v", at, d, testGrace)
	}
	if code := a.pushCode("g"); time.Now().Before(at.Add(-500 * time.Millisecond)) {
		if code != 201 {
			t.Fatalf("a push during the grace: %d, want 201", code)
		}
	} else {
		t.Log("the machine is slow: the push during the grace came after it")
	}
	waitUntil(t, "the other broker announces readonly", func() bool { return statusOf(t, b)["status"] == "readonly" })
	if got := b.memcacheStatus(t); got != "READONLY" {
		t.Fatalf("kestrel's status on the other broker: %q", got)
	}
	waitForLog(t, b, "announced=readonly enforced=up grace_ends=") // each change logged once, so /readyz's 503s need not be
	if a.ready() != 200 || b.ready() != 200 {
		t.Fatal("readonly still takes work: /readyz should answer 200")
	}
	if code := a.must(409, "PUT", "/api/v1/status", `{"status":"quiescent"}`); !strings.Contains(text(code["error"]), "pending") {
		t.Fatalf("a second stricter status while one is pending: %v", code)
	}
	for _, br := range []*brokerProc{a, b} {
		waitUntil(t, "a push is refused once the grace ends", func() bool { return br.pushCode("g") == 503 })
		if now := time.Now(); now.Before(at.Add(-100 * time.Millisecond)) {
			t.Fatalf("refused at %v, before the grace's end %v", now, at)
		}
		if st := statusOf(t, br); st["status"] != "readonly" || st["enforced"] != "readonly" || st["enforced_at"] != nil {
			t.Fatalf("after the grace: %v", st)
		}
		waitForLog(t, br, "announced=readonly enforced=readonly")
	}

	// A looser status applies at once, on both brokers.
	a.must(200, "PUT", "/api/v1/status", `{"status":"up"}`)
	if code := a.pushCode("g"); code != 201 {
		t.Fatalf("a push once up again: %d", code)
	}
	waitUntil(t, "the other broker takes pushes again", func() bool { return b.pushCode("g") == 201 })

	// One broker's own status, set through the other: only it drains.
	name := text(statusOf(t, b)["broker"])
	if brokers := statusOf(t, a)["brokers"].([]any); len(brokers) != 2 {
		t.Fatalf("the status lists %d brokers, want 2: %v", len(brokers), brokers)
	}
	a.must(404, "PUT", "/api/v1/status", `{"status":"quiescent","broker":"no-such-broker"}`)
	set = a.must(200, "PUT", "/api/v1/status", `{"status":"quiescent","broker":"`+name+`"}`)
	if set["status"] != "up" {
		t.Fatalf("another broker's own status changes only its own: this one says %v", set)
	}
	waitUntil(t, "the drained broker's /readyz answers 503 at once", func() bool { return b.ready() == 503 })
	if st := statusOf(t, b); st["status"] != "quiescent" || st["enforced"] != "up" {
		t.Fatalf("during the grace the drained broker announces quiescent and obeys up: %v", st)
	}
	waitUntil(t, "the drained broker refuses pops after the grace", func() bool {
		got, err := b.do("GET", "/api/v1/pop?topic=g", "")
		return err == nil && got.code == 503
	})
	if a.ready() != 200 || a.pushCode("g") != 201 {
		t.Fatal("the other broker should take work as before")
	}
	a.must(200, "PUT", "/api/v1/status", `{"status":"up","broker":"`+name+`"}`)
	waitUntil(t, "the broker set up again is ready", func() bool { return b.ready() == 200 })
}

// [server] default_status is a broker's own status at boot.
func TestDefaultStatus(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	b := startBrokerWith(t, srv.URL(), "", "[server]\ndefault_status = readonly\n")
	st := statusOf(t, b)
	if st["status"] != "readonly" || st["own"].(map[string]any)["status"] != "readonly" || st["fleet"].(map[string]any)["status"] != "up" {
		t.Fatalf("a broker whose default_status is readonly: %v", st)
	}
	if code := b.pushCode("d"); code != 503 {
		t.Fatalf("a push: %d, want 503", code)
	}
	other := startBroker(t, srv.URL())
	if code := other.pushCode("d"); code != 201 {
		t.Fatalf("a broker with the default status on the same Redis: push %d", code)
	}
	b.must(200, "PUT", "/api/v1/status", `{"status":"up","broker":"this"}`)
	if code := b.pushCode("d"); code != 201 {
		t.Fatalf("a push once its own status is up: %d", code)
	}
}

// SIGTSTP quiets a broker, as Sidekiq's: /readyz turns away at once; after
// the grace it takes no new jobs, while a job it handed out is finished.
func TestQuietSignal(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	b := startBrokerWith(t, srv.URL(), "", "[server]\nstatus_grace = "+testGrace.String()+"\n")
	b.must(201, "POST", "/api/v1/jobs", `{"topic":"q","body":"held"}`)
	b.must(201, "POST", "/api/v1/jobs", `{"topic":"q","body":"left"}`)
	held := b.must(200, "GET", "/api/v1/pop?topic=q", "")
	if err := b.cmd.Process.Signal(syscall.SIGTSTP); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "/readyz answers 503 once quiet", func() bool { return b.ready() == 503 })
	waitUntil(t, "pops are refused after the grace", func() bool {
		got, err := b.do("GET", "/api/v1/pop?topic=q", "")
		return err == nil && got.code == 503
	})
	b.must(200, "POST", "/api/v1/jobs/"+text(held["id"])+"/ack", "")
	if st := statusOf(t, b); st["status"] != "quiescent" || st["signals"].(map[string]any)["status"] != "quiescent" {
		t.Fatalf("quiet: %v", st)
	}
	// The API does not lift a signal's status.
	b.must(200, "PUT", "/api/v1/status", `{"status":"up","broker":"this"}`)
	if b.ready() != 503 {
		t.Fatal("a quiet broker stays quiet")
	}
}

// A broker that stops with [server] status_grace answers /readyz with 503
// for the grace before its listeners close, so load balancers leave first.
func TestStopAnnouncedForTheGrace(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	b := startBrokerWith(t, srv.URL(), "", "[server]\nstatus_grace = "+testGrace.String()+"\n")
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "/readyz answers 503 while the broker stops", func() bool { return b.ready() == 503 })
	b.exitsCleanly(t, time.Minute, "SIGTERM")
}

// text is a JSON value as a string ("" for none).
func text(v any) string {
	s, _ := v.(string)
	return s
}
