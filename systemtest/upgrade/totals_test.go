package upgrade

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/gmq/gmq/internal/redistest"
	"github.com/gmq/gmq/systemtest/harness"
)

// The pushed, reserved and deleted totals are added up by each broker and
// written once a second (pool/totals.go; docs/cli.md, stats): a broker
// shows its own at once, another broker shows them once written, a broker
// stopped writes its last ones as it stops, and an older broker, which
// still writes them in its scripts, adds into the same fields.
func TestTotalsAcrossBrokers(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an older broker")
	}
	t.Parallel()
	old := harness.BuildAt(t, beforeIssue49Commit)
	srv := redistest.Start(t)
	a, b := harness.StartBroker(t, srv.URL()), harness.StartBroker(t, srv.URL())
	// totals reads the server's and the topic's (the only one), which agree
	// once written: before, another broker shows the topic's total_jobs
	// only, which the push writes (it registers the topic).
	totals := func(p *harness.BrokerProc, topic string) [6]float64 {
		t.Helper()
		s := p.Must(200, "GET", "/api/v1/stats", "")
		ts := p.Must(200, "GET", "/api/v1/topics/"+topic, "")
		n := func(v any) float64 { f, _ := v.(float64); return f }
		return [6]float64{n(s["total_jobs"]), n(s["total_reserves"]), n(s["total_deletes"]),
			n(ts["total_jobs"]), n(ts["total_reserves"]), n(ts["total_deletes"])}
	}
	both := func(pushed, reserved, deleted float64) [6]float64 {
		return [6]float64{pushed, reserved, deleted, pushed, reserved, deleted}
	}
	life := func(p *harness.BrokerProc, pushes, acks int) {
		t.Helper()
		for range pushes {
			p.Must(201, "POST", "/api/v1/jobs", `{"topic":"tot","body":"x"}`)
		}
		for range acks {
			j := p.Must(200, "GET", "/api/v1/pop?topic=tot", "")
			p.Must(200, "POST", fmt.Sprintf("/api/v1/jobs/%v/ack", j["id"]), fmt.Sprintf(`{"attempt":%v}`, j["attempt"]))
		}
	}
	life(a, 5, 2)
	if got, want := totals(a, "tot"), both(5, 2, 2); got != want {
		t.Fatalf("the broker that counted them: pushed, reserved, deleted (the server's, the topic's) %v, want %v at once", got, want)
	}
	harness.WaitUntil(t, "the other broker shows them", func() bool { return totals(b, "tot") == both(5, 2, 2) })

	life(a, 3, 1)
	if err := a.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	a.ExitsCleanly(t, time.Minute, "SIGTERM")
	if got, want := totals(b, "tot"), both(8, 3, 3); got != want {
		t.Fatalf("after the broker that counted them stopped: %v, want %v at once", got, want)
	}

	older := harness.StartBrokerOf(t, srv.URL(), old)
	life(older, 4, 1)
	life(b, 2, 1)
	want := both(14, 5, 5)
	harness.WaitUntil(t, "both brokers' totals in the store", func() bool { return totals(older, "tot") == want })
	if got := totals(b, "tot"); got != want {
		t.Fatalf("the newer broker: %v, want %v", got, want)
	}
}
