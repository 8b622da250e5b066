package chaos

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/internal/redistest"
	"github.com/gmq/gmq/systemtest/harness"
)

// The chaos tests: producers push jobs with a TTR and consumers pop and ack
// them over HTTP while a fault strikes every few moments: the broker killed
// with SIGKILL and started again, or Redis restarted (AOF on). At the end
// every job a producer was told was stored has been acked at least once,
// none is left, every job was in exactly one state throughout, and the
// redeliveries are no more than the jobs in flight at the faults.
//
// `make test` runs a short version; `make chaos` the full one
// (GMQ_CHAOS_JOBS=100000 GMQ_CHAOS_EVERY=3s).

func chaosSettings(t *testing.T) (jobs int, every time.Duration) {
	jobs, every = 2000, 700*time.Millisecond
	if v := os.Getenv("GMQ_CHAOS_JOBS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("GMQ_CHAOS_JOBS=%q: %v", v, err)
		}
		jobs = n
	}
	if v := os.Getenv("GMQ_CHAOS_EVERY"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("GMQ_CHAOS_EVERY=%q: %v", v, err)
		}
		every = d
	}
	return jobs, every
}

// chaosStall is how long TestChaosRedisStalled freezes Redis (GMQ_CHAOS_STALL).
// 8 s with the default 5 s request timeout is the window where a retried push
// used to get a false 409: its first try answered 503 but its claim of the
// client id ran when Redis came back, while the retry was still waiting.
func chaosStall(t *testing.T) time.Duration {
	if v := os.Getenv("GMQ_CHAOS_STALL"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("GMQ_CHAOS_STALL=%q: %v", v, err)
		}
		return d
	}
	return 8 * time.Second
}

func TestChaosBrokerKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos test")
	}
	t.Parallel() // correctness, not timing: it may share the cores with the others like it
	srv := redistest.Start(t)
	b := harness.StartBroker(t, srv.URL())
	runChaos(t, b, srv, func() {
		b.Kill()
		time.Sleep(100 * time.Millisecond)
		b.Start()
	}, false, 0)
}

func TestChaosRedisRestarted(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos test")
	}
	t.Parallel() // correctness, not timing: it may share the cores with the others like it
	srv := redistest.Start(t)
	b := harness.StartBroker(t, srv.URL())
	runChaos(t, b, srv, func() {
		srv.Terminate()
		time.Sleep(300 * time.Millisecond) // clients see 503s meanwhile
		if err := srv.StartAgain(); err != nil {
			t.Error(err)
		}
	}, true, 0)
}

// Redis frozen (SIGSTOP) for several seconds under load, with client ids on
// and producers taking a 409 as "already stored", as the README tells them:
// no job may be lost, so a 409 must only ever be said for a job that exists.
func TestChaosRedisStalled(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos test")
	}
	t.Parallel() // correctness, not timing: it may share the cores with the others like it
	srv := redistest.Start(t)
	b := harness.StartBroker(t, srv.URL())
	stall := chaosStall(t)
	// Four stalls in make test's short run: producers move only between
	// stalls, so on a slow machine each stall made the load last longer and
	// called for more stalls (159 s beside six CPU-bound processes). The
	// full run (make chaos) stalls until the load is done.
	limit := 4
	if os.Getenv("GMQ_CHAOS_JOBS") != "" {
		limit = 0
	}
	runChaos(t, b, srv, func() {
		if err := srv.Stall(stall); err != nil {
			t.Error(err)
		}
	}, true, limit)
}

// strikeWhile runs fault every interval until the producers are done, at
// most limit times (0: no limit), and says how many times it struck.
func strikeWhile(producers *sync.WaitGroup, every time.Duration, limit int, fault func()) (faults int) {
	produced := make(chan struct{})
	go func() { producers.Wait(); close(produced) }() // ends with the producers
	for limit == 0 || faults < limit {
		select {
		case <-produced:
			return faults
		case <-time.After(every):
			fault()
			faults++
		}
	}
	<-produced
	return faults
}

// drain waits until missing (the stored jobs not yet where they must end)
// is empty; it fails the test, showing a few of them, when their count has
// not moved for 20 s.
func drain(t *testing.T, b *harness.BrokerProc, where string, missing func() []string) {
	t.Helper()
	counted := func() int {
		if t.Failed() { // a failure elsewhere (a broker that died): no use waiting
			t.FailNow()
		}
		return len(missing())
	}
	if brokertest.Settle(counted, 20*time.Second) == 0 {
		return
	}
	left := missing()
	if len(left) == 0 { // settled just now
		return
	}
	for _, id := range left[:min(len(left), 5)] {
		a, err := b.Do("GET", "/api/v1/jobs/"+id, ``)
		t.Logf("not %s: %s: %d %v %v", where, id, a.Code, a.Body, err)
	}
	t.Fatalf("%d stored jobs are not %s, and none changed for 20s", len(left), where)
}

// runChaos runs the load, striking with fault every few moments until the
// producers are done (at most limit times, 0: no limit); wantErrors says the
// clients must have seen 503s naming Redis meanwhile.
func runChaos(t *testing.T, b *harness.BrokerProc, srv *redistest.Server, fault func(), wantErrors bool, limit int) {
	jobs, every := chaosSettings(t)
	const producers, consumers = 4, 4
	store := harness.Checker(t, srv.URL())

	var stored, acked sync.Map
	var deliveries, redeliveries, unavailable atomic.Int64
	retry := func(call func() bool) { harness.RetryWhileDown(t, call) }
	down := func(a harness.Answer, err error) bool {
		if err == nil && a.Code == 503 {
			if msg, _ := a.Body["error"].(string); strings.Contains(msg, "redis") {
				unavailable.Add(1)
			} else {
				t.Errorf("503 without a reason naming Redis: %v", a.Body)
			}
		}
		return err != nil || a.Code == 503
	}

	var producing sync.WaitGroup
	for p := range producers {
		producing.Go(func() {
			for i := p; i < jobs; i += producers {
				id := fmt.Sprintf("job-%d", i)
				retry(func() bool {
					a, err := b.Do("POST", "/api/v1/jobs", fmt.Sprintf(`{"id":%q,"topic":"chaos","body":"x","TTR":2}`, id))
					if down(a, err) {
						return false
					}
					// 409: a push cut off by a fault had stored it already.
					if a.Code != 201 && a.Code != 409 {
						t.Errorf("push %s: %d %v", id, a.Code, a.Body)
					}
					stored.Store(id, true)
					return true
				})
			}
		})
	}
	stopConsumers := harness.Consume(t, consumers, func() {
		a, err := b.Do("GET", "/api/v1/pop?topic=chaos&timeout=0.5", ``)
		if down(a, err) {
			time.Sleep(20 * time.Millisecond)
			return
		}
		if a.Code != 200 {
			return
		}
		id := a.Body["id"].(string)
		deliveries.Add(1)
		if a.Body["attempt"].(float64) > 1 {
			redeliveries.Add(1)
		}
		path := fmt.Sprintf("/api/v1/jobs/%s/ack?attempt=%v", id, a.Body["attempt"])
		retry(func() bool {
			r, err := b.Do("POST", path, ``)
			if down(r, err) {
				return false
			}
			// 404: an ack cut off by a fault had deleted it; 409: its TTR ran
			// out meanwhile and another delivery will ack it.
			if r.Code == 200 || r.Code == 404 {
				acked.Store(id, true)
			}
			return true
		})
	})
	defer stopConsumers() // on every way out, so no consumer outlives the test

	faults := strikeWhile(&producing, every, limit, fault)

	// Drain the backlog: fail only when acks stop coming (TTRs are 2s, so a
	// job in no consumer's hands is delivered again within seconds).
	drain(t, b, "acked", func() (missing []string) {
		stored.Range(func(k, _ any) bool {
			if _, ok := acked.Load(k); !ok {
				missing = append(missing, k.(string))
			}
			return true
		})
		return missing
	})
	// Then every job in the store, too: a push retried after a fault cut its
	// answer off may store its id again once the first job was acked and
	// its id freed (at-least-once for a producer that retries), and that
	// job must be delivered and acked as well.
	left := func() int {
		stats := b.Must(200, "GET", "/api/v1/stats", ``)
		return int(stats["current_jobs_ready"].(float64) + stats["current_jobs_delayed"].(float64) + stats["current_jobs_reserved"].(float64))
	}
	if brokertest.Settle(left, 20*time.Second) != 0 {
		// Whether a job is held or a count drifted: the store's own check says.
		problems, err := store.Check(context.Background())
		t.Fatalf("%d jobs left after all were acked, none acked for 20 s: %v; the store's check: %v %v",
			left(), b.Must(200, "GET", "/api/v1/stats", ``), problems, err)
	}
	stopConsumers()
	harness.MustBeConsistent(t, store, "after the chaos")
	t.Logf("%d jobs, %d faults, %d deliveries, %d redeliveries, %d answers 503 naming Redis",
		jobs, faults, deliveries.Load(), redeliveries.Load(), unavailable.Load())
	if faults == 0 {
		t.Fatal("no fault struck: the load ended too soon to test anything")
	}
	if bound := int64(faults * consumers); redeliveries.Load() > bound {
		t.Fatalf("%d redeliveries, more than the %d jobs in flight at the faults", redeliveries.Load(), bound)
	}
	if wantErrors && unavailable.Load() == 0 {
		t.Fatal("clients saw no 503 while Redis was down")
	}
}
