package upgrade

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gmq/gmq/internal/redistest"
	"github.com/gmq/gmq/pool"
	"github.com/gmq/gmq/systemtest/harness"
)

// A job's errors need no store format of their own: beside a broker that
// does not know them (same store format), a job failed on both keeps the
// errors this broker recorded through the older broker's fail, and each
// broker reads and moves it; the store checks clean. The older broker's
// own failures are in last_error only.
func TestErrorsBesideAnOlderBroker(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an older broker")
	}
	t.Parallel()
	old := harness.BuildAt(t, beforeIssue49Commit) // it reads store format 6 and knows no F_ERRORS
	srv := redistest.Start(t)
	a := harness.StartBrokerOf(t, srv.URL(), old)
	b := harness.StartBroker(t, srv.URL())
	if f := harness.MetaField(t, srv.URL(), "format")(); f != fmt.Sprint(pool.StoreFormat) {
		t.Fatalf("the store is at format %q, want %d: both brokers read it", f, pool.StoreFormat)
	}
	b.Must(200, "PUT", "/api/v1/topics/errs-up/config", `{"backoff": "fixed", "backoff_base": 0}`)
	b.Must(201, "POST", "/api/v1/jobs", `{"id":"eu-1","topic":"errs-up","body":"x"}`)
	for i, by := range []*harness.BrokerProc{b, a, b} {
		j := by.Must(200, "GET", "/api/v1/pop?topic=errs-up&timeout=5", ``)
		if j["id"] != "eu-1" {
			t.Fatalf("pop %d: %v", i+1, j)
		}
		by.Must(200, "POST", "/api/v1/jobs/eu-1/fail", fmt.Sprintf(`{"attempt":%v,"error":"failure %d"}`, j["attempt"], i+1))
	}
	j := b.Must(200, "GET", "/api/v1/jobs/eu-1", ``)
	var kept []string
	list, _ := j["errors"].([]any)
	for _, e := range list {
		e := e.(map[string]any)
		kept = append(kept, fmt.Sprintf("%v:%v", e["attempt"], e["error"]))
	}
	if strings.Join(kept, "|") != "1:failure 1|3:failure 3" || j["failures"] != 3.0 || j["last_error"] != "failure 3" {
		t.Fatalf("the job after fails on both brokers: errors %q, %v", kept, j)
	}
	if j := a.Must(200, "GET", "/api/v1/jobs/eu-1", ``); j["failures"] != 3.0 || j["state"] != "ready" {
		t.Fatalf("the older broker reads the job as %v", j)
	}
	a.Must(200, "DELETE", "/api/v1/jobs/eu-1", ``)
	harness.MustBeConsistent(t, harness.Checker(t, srv.URL()), "after fails on both brokers")
}
