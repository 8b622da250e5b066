package brokers

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gmq/gmq/internal/redistest"
	"github.com/gmq/gmq/systemtest/harness"
)

// The grace of these tests: long enough that a loaded machine takes the
// steps meant to come before its end before it (each such step checks that
// it did, and says so otherwise), short enough to wait out.
const testGrace = 4 * time.Second

// statusOf reads a broker's GET /api/v1/status.
func statusOf(t *testing.T, b *harness.BrokerProc) map[string]any {
	t.Helper()
	return b.Must(200, "GET", "/api/v1/status", "")
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
	a := harness.StartBrokerWith(t, srv.URL(), "", conf)
	b := harness.StartBrokerWith(t, srv.URL(), "", conf)

	set := a.Must(200, "PUT", "/api/v1/status", `{"status":"readonly"}`)
	sent := time.Now()
	at, err := time.Parse(time.RFC3339Nano, text(set["enforced_at"]))
	if set["status"] != "readonly" || set["enforced"] != "up" || err != nil {
		t.Fatalf("a stricter status with a grace: %v (enforced_at: %v)", set, err)
	}
	if d := at.Sub(sent); d < testGrace-time.Second || d > testGrace+time.Second {
		t.Fatalf("enforced at %v, %v after it was set; the grace is %v", at, d, testGrace)
	}
	if code := a.PushCode("g"); time.Now().Before(at.Add(-500 * time.Millisecond)) {
		if code != 201 {
			t.Fatalf("a push during the grace: %d, want 201", code)
		}
	} else {
		t.Log("the machine is slow: the push during the grace came after it")
	}
	harness.WaitUntil(t, "the other broker announces readonly", func() bool { return statusOf(t, b)["status"] == "readonly" })
	if got := b.MemcacheStatus(t); got != "READONLY" {
		t.Fatalf("kestrel's status on the other broker: %q", got)
	}
	harness.WaitForLog(t, b, "announced=readonly enforced=up grace_ends=") // each change logged once, so /readyz's 503s need not be
	if a.Ready() != 200 || b.Ready() != 200 {
		t.Fatal("readonly still takes work: /readyz should answer 200")
	}
	if code := a.Must(409, "PUT", "/api/v1/status", `{"status":"quiescent"}`); !strings.Contains(text(code["error"]), "pending") {
		t.Fatalf("a second stricter status while one is pending: %v", code)
	}
	for _, br := range []*harness.BrokerProc{a, b} {
		harness.WaitUntil(t, "a push is refused once the grace ends", func() bool { return br.PushCode("g") == 503 })
		if now := time.Now(); now.Before(at.Add(-100 * time.Millisecond)) {
			t.Fatalf("refused at %v, before the grace's end %v", now, at)
		}
		if st := statusOf(t, br); st["status"] != "readonly" || st["enforced"] != "readonly" || st["enforced_at"] != nil {
			t.Fatalf("after the grace: %v", st)
		}
		harness.WaitForLog(t, br, "announced=readonly enforced=readonly")
	}

	// A looser status applies at once, on both brokers.
	a.Must(200, "PUT", "/api/v1/status", `{"status":"up"}`)
	if code := a.PushCode("g"); code != 201 {
		t.Fatalf("a push once up again: %d", code)
	}
	harness.WaitUntil(t, "the other broker takes pushes again", func() bool { return b.PushCode("g") == 201 })

	// One broker's own status, set through the other: only it drains.
	name := text(statusOf(t, b)["broker"])
	if brokers := statusOf(t, a)["brokers"].([]any); len(brokers) != 2 {
		t.Fatalf("the status lists %d brokers, want 2: %v", len(brokers), brokers)
	}
	a.Must(404, "PUT", "/api/v1/status", `{"status":"quiescent","broker":"no-such-broker"}`)
	set = a.Must(200, "PUT", "/api/v1/status", `{"status":"quiescent","broker":"`+name+`"}`)
	if set["status"] != "up" {
		t.Fatalf("another broker's own status changes only its own: this one says %v", set)
	}
	harness.WaitUntil(t, "the drained broker's /readyz answers 503 at once", func() bool { return b.Ready() == 503 })
	if st := statusOf(t, b); st["status"] != "quiescent" || st["enforced"] != "up" {
		t.Fatalf("during the grace the drained broker announces quiescent and obeys up: %v", st)
	}
	harness.WaitUntil(t, "the drained broker refuses pops after the grace", func() bool {
		got, err := b.Do("GET", "/api/v1/pop?topic=g", "")
		return err == nil && got.Code == 503
	})
	if a.Ready() != 200 || a.PushCode("g") != 201 {
		t.Fatal("the other broker should take work as before")
	}
	a.Must(200, "PUT", "/api/v1/status", `{"status":"up","broker":"`+name+`"}`)
	harness.WaitUntil(t, "the broker set up again is ready", func() bool { return b.Ready() == 200 })
}

// [server] default_status is a broker's own status at boot.
func TestDefaultStatus(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	b := harness.StartBrokerWith(t, srv.URL(), "", "[server]\ndefault_status = readonly\n")
	st := statusOf(t, b)
	if st["status"] != "readonly" || st["own"].(map[string]any)["status"] != "readonly" || st["fleet"].(map[string]any)["status"] != "up" {
		t.Fatalf("a broker whose default_status is readonly: %v", st)
	}
	if code := b.PushCode("d"); code != 503 {
		t.Fatalf("a push: %d, want 503", code)
	}
	other := harness.StartBroker(t, srv.URL())
	if code := other.PushCode("d"); code != 201 {
		t.Fatalf("a broker with the default status on the same Redis: push %d", code)
	}
	b.Must(200, "PUT", "/api/v1/status", `{"status":"up","broker":"this"}`)
	if code := b.PushCode("d"); code != 201 {
		t.Fatalf("a push once its own status is up: %d", code)
	}
}

// SIGTSTP quiets a broker, as Sidekiq's: /readyz turns away at once; after
// the grace it takes no new jobs, while a job it handed out is finished.
func TestQuietSignal(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	b := harness.StartBrokerWith(t, srv.URL(), "", "[server]\nstatus_grace = "+testGrace.String()+"\n")
	b.Must(201, "POST", "/api/v1/jobs", `{"topic":"q","body":"held"}`)
	b.Must(201, "POST", "/api/v1/jobs", `{"topic":"q","body":"left"}`)
	held := b.Must(200, "GET", "/api/v1/pop?topic=q", "")
	if err := b.Cmd.Process.Signal(syscall.SIGTSTP); err != nil {
		t.Fatal(err)
	}
	harness.WaitUntil(t, "/readyz answers 503 once quiet", func() bool { return b.Ready() == 503 })
	harness.WaitUntil(t, "pops are refused after the grace", func() bool {
		got, err := b.Do("GET", "/api/v1/pop?topic=q", "")
		return err == nil && got.Code == 503
	})
	b.Must(200, "POST", "/api/v1/jobs/"+text(held["id"])+"/ack", "")
	if st := statusOf(t, b); st["status"] != "quiescent" || st["signals"].(map[string]any)["status"] != "quiescent" {
		t.Fatalf("quiet: %v", st)
	}
	// The API does not lift a signal's status.
	b.Must(200, "PUT", "/api/v1/status", `{"status":"up","broker":"this"}`)
	if b.Ready() != 503 {
		t.Fatal("a quiet broker stays quiet")
	}
}

// A broker that stops with [server] status_grace answers /readyz with 503
// for the grace before its listeners close, so load balancers leave first.
func TestStopAnnouncedForTheGrace(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	b := harness.StartBrokerWith(t, srv.URL(), "", "[server]\nstatus_grace = "+testGrace.String()+"\n")
	if err := b.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	harness.WaitUntil(t, "/readyz answers 503 while the broker stops", func() bool { return b.Ready() == 503 })
	b.ExitsCleanly(t, time.Minute, "SIGTERM")
}

// text is a JSON value as a string ("" for none).
func text(v any) string {
	s, _ := v.(string)
	return s
}
