package upgrade

import (
	"fmt"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/gmq/gmq/internal/redistest"
	"github.com/gmq/gmq/pool"
	"github.com/gmq/gmq/systemtest/harness"
)

// beforeIssue49Commit is the last commit before issue 49: its broker reads
// store formats up to 6, as this one does, and knows neither keep_results
// nor a job's errors.
const beforeIssue49Commit = "e1418df31669a542ec358d563fb04ed307f787e8"

// keep_results raised no store format (docs/operations.md, Upgrades): a
// broker without it and one with it, on one Redis, leave the store at its
// format. The newer keeps a job acked with a result, completed; the older
// shows the setting and the kept job, deletes the jobs it acks itself as
// it did, and, alone, removes the kept job when its time is up. The store
// checks clean throughout. The jobs checked with both brokers running are
// kept an hour: a store check reads topic by topic, so a job whose time
// ran out between two reads would show as half removed (one run took more
// than 2 s from the ack to the check); the older broker removes another,
// kept 1 s.
func TestKeepResultsBesideAnOlderBroker(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an older broker")
	}
	t.Parallel()
	old := harness.BuildAt(t, beforeIssue49Commit)
	srv := redistest.Start(t)
	a := harness.StartBrokerOf(t, srv.URL(), old)
	b := harness.StartBroker(t, srv.URL())
	call := func(p *harness.BrokerProc, want int, method, path, body string) harness.Answer {
		t.Helper()
		r, err := p.Do(method, path, body)
		if err != nil || r.Code != want {
			t.Fatalf("%s %s %s: %d %v %v, want %d", method, path, body, r.Code, r.Body, err, want)
		}
		return r
	}
	format := harness.MetaField(t, srv.URL(), "format")
	newest := strconv.Itoa(pool.StoreFormat)
	if f := format(); f != newest {
		t.Fatalf("with both brokers running, the store is at format %q, want %s: keep_results needs no new one", f, newest)
	}
	call(b, 200, "PUT", "/api/v1/topics/kr/config", `{"keep_results": 3600}`)
	call(b, 200, "PUT", "/api/v1/topics/kr-short/config", `{"keep_results": 1}`)
	if got := call(a, 200, "GET", "/api/v1/topics/kr/config", ""); fmt.Sprint(got.Body["run"]) != "map[keep_results:3600]" {
		t.Fatalf("the older broker's view of the settings: %v", got.Body)
	}
	ack := func(p *harness.BrokerProc, topic, id string) harness.Answer {
		t.Helper()
		call(p, 201, "POST", "/api/v1/jobs", fmt.Sprintf(`{"id":%q,"topic":%q,"body":"x"}`, id, topic))
		j := call(p, 200, "GET", "/api/v1/pop?topic="+topic, "")
		return call(p, 200, "POST", "/api/v1/jobs/"+id+"/ack", fmt.Sprintf(`{"attempt":%v,"result":{"id":%q}}`, j.Body["attempt"], id))
	}
	if got := ack(b, "kr", "kr-new"); got.Body["kept_for"] != 3600.0 {
		t.Fatalf("the newer broker's ack with a result: %v, want it kept for an hour", got.Body)
	}
	if got := call(a, 200, "GET", "/api/v1/jobs/kr-new", ""); got.Body["state"] != "completed" || fmt.Sprint(got.Body["result"]) != "map[id:kr-new]" {
		t.Fatalf("the kept job, read by the older broker: %v", got.Body)
	}
	if got := ack(a, "kr", "kr-old"); got.Body["kept_for"] != nil {
		t.Fatalf("the older broker's ack with a result: %v", got.Body)
	}
	call(b, 404, "GET", "/api/v1/jobs/kr-old", "") // the older broker deletes as it did
	harness.MustBeConsistent(t, harness.Checker(t, srv.URL()), "both brokers")
	if got := ack(b, "kr-short", "kr-brief"); got.Body["kept_for"] != 1.0 {
		t.Fatalf("the newer broker's ack with a result: %v, want it kept for 1 s", got.Body)
	}

	if err := b.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	b.ExitsCleanly(t, time.Minute, "SIGTERM")
	harness.WaitUntil(t, "the older broker's timer removes the kept job when its time is up", func() bool {
		r, err := a.Do("GET", "/api/v1/jobs/kr-brief", "")
		return err == nil && r.Code == 404
	})
	if f := format(); f != newest {
		t.Fatalf("the store at format %q, want %s", f, newest)
	}
	harness.MustBeConsistent(t, harness.Checker(t, srv.URL()), "the older broker alone")
}
