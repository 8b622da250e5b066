package chaos

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/internal/redistest"
	"github.com/gmq/gmq/systemtest/harness"
)

// Dependency trees across SIGKILLs on a 3-master Cluster: each tree is
// three leaves, a middle job after them and a root after the middle and a
// leaf, in three topics whose buckets lie on different masters; consumers
// on two brokers fail a quarter of the deliveries (each retried), and the
// brokers are killed in turn while the trees are pushed and worked. Every
// dependent is popped only when every job it names has completed, each
// job completes once (its topic counts one completion a job), no job is
// left waiting, and the store checks clean.
func TestChaosDependenciesOnCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos test")
	}
	t.Parallel()
	const trees = 150
	c := redistest.StartCluster(t, 3, 0)
	brokers := []*harness.BrokerProc{harness.StartBroker(t, c.URL()), harness.StartBroker(t, c.URL())}
	store := harness.Checker(t, c.URL())
	fleet := &harness.InTurn{T: t, Brokers: brokers, Limit: 20 * time.Second}
	pick, down, call := fleet.Pick, harness.IsDown, fleet.Call
	const job = `"ttr":3,"keep_completed":600,"retry":{"max_attempts":20,"backoff":"fixed","base":0.05}`
	deps := map[string][]string{} // a dependent's client id -> those it waits for
	ended := harness.Ending(t)    // the loops below stop once the test has failed
	var producing sync.WaitGroup
	producing.Go(func() {
		for i := range trees {
			leaf := func(k int) string { return fmt.Sprintf("t%d-leaf%d", i, k) }
			mid, root := fmt.Sprintf("t%d-mid", i), fmt.Sprintf("t%d-root", i)
			pushes := []struct {
				id, topic string
				after     []string
			}{
				{leaf(0), "tree-leaf", nil}, {leaf(1), "tree-leaf", nil}, {leaf(2), "tree-leaf", nil},
				{mid, "tree-mid", []string{leaf(0), leaf(1), leaf(2)}},
				{root, "tree-root", []string{mid, leaf(0)}},
			}
			for _, p := range pushes {
				after := ""
				if p.after != nil {
					after = `,"after":["` + strings.Join(p.after, `","`) + `"]`
				}
				a := call("POST", "/api/v1/jobs", fmt.Sprintf(`{"id":%q,"topic":%q,"body":%q,%s%s}`, p.id, p.topic, p.id, job, after))
				if ended.Err() != nil { // the test failed: call gave up
					return
				}
				if a.Code != 201 && a.Code != 409 { // 409: a push a kill cut off had stored it
					t.Errorf("push %s: %d %v", p.id, a.Code, a.Body)
				}
			}
			deps[mid], deps[root] = pushes[3].after, pushes[4].after
		}
	})
	var early []string     // dependents popped before a job they name completed
	var completed sync.Map // client id -> true, once its ack answered
	var mu sync.Mutex
	var failed atomic.Int64
	stop := harness.Consume(t, 4, func() {
		a, err := pick().Do("POST", "/api/v1/pop", `{"topics":["tree-leaf","tree-mid","tree-root"],"timeout":0.5}`)
		if down(a, err) || a.Code != 200 {
			time.Sleep(20 * time.Millisecond)
			return
		}
		id, attempt := a.Body["id"].(string), a.Body["attempt"]
		if a.Body["topic"] != "tree-leaf" {
			producing.Wait() // deps is complete
			for _, dep := range deps[id] {
				if v := call("GET", "/api/v1/jobs/"+dep, ``); v.Body["state"] != "completed" {
					mu.Lock()
					early = append(early, fmt.Sprintf("%s before %s (%v)", id, dep, v.Body["state"]))
					mu.Unlock()
				}
			}
		}
		if rand.IntN(4) == 0 {
			failed.Add(1)
			call("POST", fmt.Sprintf("/api/v1/jobs/%s/fail?attempt=%v", id, attempt), `{"error":"chaos"}`)
			return
		}
		if r := call("POST", fmt.Sprintf("/api/v1/jobs/%s/ack?attempt=%v", id, attempt), ``); r.Code == 200 {
			completed.Store(id, true)
		}
	})
	defer stop()
	left := func() (out []string) {
		for i := range trees {
			if _, ok := completed.Load(fmt.Sprintf("t%d-root", i)); !ok {
				out = append(out, fmt.Sprintf("t%d-root", i))
			}
		}
		return out
	}
	kills := 0
	for ; kills < 8 && len(left()) > 0 && !t.Failed(); kills++ {
		time.Sleep(400 * time.Millisecond)
		b := brokers[kills%2]
		b.Kill()
		time.Sleep(100 * time.Millisecond)
		b.Start()
	}
	producing.Wait()
	if brokertestSettle(t, left) > 0 { // what a stuck root waits for, before drain fails
		for _, root := range left() {
			v := brokers[0].Must(200, "GET", "/api/v1/jobs/"+root, ``)
			if w, _ := v["waiting_for"].([]any); len(w) > 0 {
				t.Logf("%s (%v) waits for %v: %v", root, v["state"], w[0], brokers[0].Must(200, "GET", fmt.Sprintf("/api/v1/jobs/%v", w[0]), ``))
			}
		}
		t.Logf("stats: %v", brokers[0].Must(200, "GET", "/api/v1/stats", ``))
	}
	drain(t, brokers[0], "every tree's root completed", left)
	stop()
	mu.Lock()
	defer mu.Unlock()
	if len(early) > 0 {
		t.Fatalf("dependents ran before their dependencies completed: %v", early)
	}
	for topic, want := range map[string]float64{"tree-leaf": 3 * trees, "tree-mid": trees, "tree-root": trees} {
		v := brokers[0].Must(200, "GET", "/api/v1/topics/"+topic, ``)
		if v["total_completed"] != want || v["total_jobs"] != want {
			t.Errorf("%s: %v jobs, %v completed, want %v of each", topic, v["total_jobs"], v["total_completed"], want)
		}
	}
	harness.MustBeConsistent(t, store, "after the chaos")
	t.Logf("%d trees, %d kills, %d failures retried", trees, kills, failed.Load())
	if kills < 3 {
		t.Fatalf("%d kills: the load ended too soon to test the faults", kills)
	}
}

// brokertestSettle waits for missing to come to nothing, or to stop
// changing, and says how many are left; it ends the test (from its own
// goroutine) when the test has failed meanwhile.
func brokertestSettle(t *testing.T, missing func() []string) int {
	return brokertest.Settle(func() int {
		if t.Failed() {
			t.FailNow()
		}
		return len(missing())
	}, 10*time.Second)
}
