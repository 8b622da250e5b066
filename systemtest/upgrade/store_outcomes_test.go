package upgrade

import (
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gmq/gmq/internal/redistest"
	"github.com/gmq/gmq/pool"
	"github.com/gmq/gmq/systemtest/harness"
)

// formatTwoCommit is the last commit whose broker reads and writes store
// format 2 at most: it knows no completed state.
const formatTwoCommit = "cd4a6ff60c862a185932d2ecfbfbce9a51101ef6"

// Completed jobs wait for store format 3 (pool/format.go): with a format 2
// broker on the Redis, the store stays at 2 and every ack deletes its job,
// whatever its topic's keep_completed says and whichever broker acks;
// once the old broker has gone, the store is raised and an ack completes
// its job with its result. The older broker, started again, refuses the
// newer store. Every job pushed is acked once, none is lost, and the store
// checks clean at each step.
func TestCompletedJobsWaitForFormat3(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an older broker")
	}
	t.Parallel()
	old := harness.BuildAt(t, formatTwoCommit)
	srv := redistest.Start(t)
	a := harness.StartBrokerOf(t, srv.URL(), old) // first: the store takes format 2
	b := harness.StartBroker(t, srv.URL())
	call := func(p *harness.BrokerProc, want int, method, path, body string) harness.Answer {
		t.Helper()
		r, err := p.Do(method, path, body)
		if err != nil || r.Code != want {
			t.Fatalf("%s %s %s: %d %v %v, want %d", method, path, body, r.Code, r.Body, err, want)
		}
		return r
	}
	call(b, 200, "PUT", "/api/v1/topics/reports/config", `{"keep_completed": 3600}`)
	format := harness.MetaField(t, srv.URL(), "format")
	if f := format(); f != "2" {
		t.Fatalf("with a format 2 broker running, the store is at format %q", f)
	}
	// Through both brokers, each ack by the other one: every job deleted.
	brokers := []*harness.BrokerProc{a, b}
	for i := range 20 {
		id := fmt.Sprintf("old-%d", i)
		call(brokers[i%2], 201, "POST", "/api/v1/jobs", fmt.Sprintf(`{"id":%q,"topic":"reports","body":"x"}`, id))
		j := call(brokers[(i+1)%2], 200, "GET", "/api/v1/pop?topic=reports", "")
		ack := fmt.Sprintf(`{"attempt":%v}`, j.Body["attempt"])
		if brokers[i%2] == b { // the older broker knows no result
			ack = fmt.Sprintf(`{"attempt":%v,"result":{"n":%d}}`, j.Body["attempt"], i)
		}
		call(brokers[i%2], 200, "POST", "/api/v1/jobs/"+fmt.Sprint(j.Body["id"])+"/ack", ack)
		call(b, 404, "GET", "/api/v1/jobs/"+id, "")
	}
	if st := call(b, 200, "GET", "/api/v1/topics/reports", ""); st.Body["completed"] != 0.0 || st.Body["total_deletes"] != 20.0 {
		t.Fatalf("in format 2: %v, want 20 acks deleted and none completed", st.Body)
	}
	harness.MustBeConsistent(t, harness.Checker(t, srv.URL()), "in format 2")

	// The old broker stops; the store is raised; acks complete.
	if err := a.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	a.ExitsCleanly(t, time.Minute, "SIGTERM")
	newest := strconv.Itoa(pool.StoreFormat) // 3 or later: the newest both read once the old broker has gone
	harness.WaitUntil(t, "the store raised to format "+newest, func() bool { return format() == newest })
	call(b, 201, "POST", "/api/v1/jobs", `{"id":"new-1","topic":"reports","body":"x"}`)
	j := call(b, 200, "GET", "/api/v1/pop?topic=reports", "")
	call(b, 200, "POST", "/api/v1/jobs/new-1/ack", fmt.Sprintf(`{"attempt":%v,"result":{"url":"/r/1"}}`, j.Body["attempt"]))
	got := call(b, 200, "GET", "/api/v1/jobs/new-1", "")
	if got.Body["state"] != "completed" || fmt.Sprint(got.Body["result"]) != "map[url:/r/1]" {
		t.Fatalf("in format 3: %v, want completed with its result", got.Body)
	}
	harness.MustBeConsistent(t, harness.Checker(t, srv.URL()), "in format 3")

	// The older broker, back, refuses the store it cannot read.
	out, err := exec.Command(old, "start", "-c", a.Conf, "--http", a.Addr, "--beanstalk", a.Beanstalk, "--rpc", a.RPC,
		"--kestrel", a.Kestrel, "--redis", a.Redis).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "store format "+newest) {
		t.Fatalf("the format 2 broker on a format %s store: %v\n%s", newest, err, out)
	}
}
