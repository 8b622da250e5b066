package brokers

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beanstalkd/go-beanstalk"

	"github.com/gmq/gmq/internal/redistest"
	"github.com/gmq/gmq/job"
	"github.com/gmq/gmq/systemtest/harness"
)

// Fair groups across brokers (issue 23): a grouped topic's ring lives in
// Redis and the pop script takes groups in turn, so a tenant with 10,000
// jobs does not starve tenants with ten, whichever broker and protocol pops.

// pushGroupJobs pushes n jobs of group g to topic through b, in batches.
func pushGroupJobs(t *testing.T, b *harness.BrokerProc, topic, g string, n int) {
	t.Helper()
	for from := 0; from < n; from += 1000 {
		jobs := make([]string, 0, 1000)
		for i := from; i < min(from+1000, n); i++ {
			jobs = append(jobs, fmt.Sprintf(`{"topic":%q,"body":%q,"group":%q,"ttr":600}`, topic, g, g))
		}
		b.Must(201, "POST", "/api/v1/jobs/batch", `{"jobs":[`+strings.Join(jobs, ",")+`]}`)
	}
}

// One heavy group of 10,000 jobs, pushed first, and 20 light groups of 10:
// the first 300 pops, taken in turn over HTTP and beanstalkd on two
// brokers, serve every light job.
func TestGroupsHeavyDoesNotStarveLight(t *testing.T) {
	t.Parallel() // correctness, not timing: it may share the cores with the others like it
	srv := redistest.Start(t)
	brokers := []*harness.BrokerProc{harness.StartBroker(t, srv.URL()), harness.StartBroker(t, srv.URL())}
	pushGroupJobs(t, brokers[0], "tenants", "heavy", 10000)
	for g := range 20 {
		pushGroupJobs(t, brokers[g%2], "tenants", fmt.Sprintf("light-%02d", g), 10)
	}
	conns := make([]*beanstalk.TubeSet, 2)
	for i, b := range brokers {
		c, err := beanstalk.Dial("tcp", b.Beanstalk)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns[i] = beanstalk.NewTubeSet(c, "tenants")
	}
	served := map[string]int{}
	for n := range 300 {
		var body string
		switch b := brokers[n%2]; n % 4 {
		case 0, 1:
			a := b.Must(200, "GET", "/api/v1/pop?topic=tenants", "")
			body = fmt.Sprint(a["body"])
		default:
			_, data, err := conns[n%2].Reserve(5 * time.Second)
			if err != nil {
				t.Fatalf("reserve %d: %v", n, err)
			}
			body = string(data)
		}
		served[body]++
	}
	for g := range 20 {
		if name := fmt.Sprintf("light-%02d", g); served[name] != 10 {
			t.Errorf("%s: %d of its 10 jobs served in the first 300 pops", name, served[name])
		}
	}
	if served["heavy"] != 100 {
		t.Errorf("heavy: %d served, want the other 100", served["heavy"])
	}
	st := brokers[1].Must(200, "GET", "/api/v1/topics/tenants", "")
	if st["groups"] != 1.0 {
		t.Errorf("groups with ready jobs: %v, want 1 (heavy)", st["groups"])
	}
	harness.MustBeConsistent(t, harness.Checker(t, srv.URL()), "after the pops")
}

// group_max_reserved = 1 across two brokers and two protocols, with TTRs
// running out: sampled from Redis every few ms, no group ever has two jobs
// reserved, every job is acked in the end, and the store stays consistent.
func TestGroupMaxReservedAcrossBrokers(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos test")
	}
	t.Parallel() // correctness, not timing: it may share the cores with the others like it
	const groups, perGroup = 8, 15
	srv := redistest.Start(t)
	brokers := []*harness.BrokerProc{harness.StartBroker(t, srv.URL()), harness.StartBroker(t, srv.URL())}
	store := harness.Checker(t, srv.URL())
	brokers[0].Must(200, "PUT", "/api/v1/topics/serial/config", `{"group_max_reserved": 1}`)
	var jobs []string
	for i := range groups * perGroup {
		jobs = append(jobs, fmt.Sprintf(`{"topic":"serial","body":"x","group":"g%d","ttr":1}`, i%groups))
	}
	brokers[1].Must(201, "POST", "/api/v1/jobs/batch", `{"jobs":[`+strings.Join(jobs, ",")+`]}`)

	ctx, stop := context.WithTimeout(context.Background(), 60*time.Second)
	defer stop()
	var acked atomic.Int64
	var wg sync.WaitGroup
	for i := range 12 {
		b := brokers[i%2]
		expire := i%4 == 0 // these let every third job's TTR run out
		if i%3 == 0 {
			wg.Go(func() { beanstalkConsumer(ctx, t, b, "serial", expire, &acked) })
			continue
		}
		wg.Go(func() { httpConsumer(ctx, t, b, "serial", expire, &acked) })
	}
	peak, samples := 0, 0
	for ctx.Err() == nil {
		reserved, _, err := store.ListJobs(context.Background(), "serial", job.Reserved, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		per := map[string]int{}
		for _, j := range reserved {
			per[j.Group]++
			peak = max(peak, per[j.Group])
		}
		samples++
		if drained(store, "serial") {
			break
		}
		time.Sleep(3 * time.Millisecond)
	}
	stop()
	wg.Wait()
	// The brokers write the deletes they counted within a second (pool/totals.go).
	harness.WaitUntil(t, "every delete counted in the store", func() bool { return topicStats(t, store, "serial").Deletes >= groups*perGroup })
	st := topicStats(t, store, "serial")
	t.Logf("%d samples, %d acks answered, %d deletes, at most %d of one group reserved at once", samples, acked.Load(), st.Deletes, peak)
	if peak > 1 {
		t.Errorf("%d jobs of one group reserved at once, group_max_reserved is 1", peak)
	}
	if st.Deletes != groups*perGroup {
		t.Errorf("%d deletes, want %d", st.Deletes, groups*perGroup)
	}
	harness.MustBeConsistent(t, store, "after the consumers")
}
