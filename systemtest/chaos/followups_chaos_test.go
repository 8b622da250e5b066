package chaos

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gmq/gmq/internal/redistest"
	"github.com/gmq/gmq/systemtest/harness"
)

// Follow-ups across SIGKILLs: jobs of a topic are acked each with one
// follow-up to another topic while the broker is killed and started again
// every few moments. An ack whose answer a kill cut off is retried (404:
// it went through), a delivery whose TTR ran out is fenced by its attempt
// (409: the next delivery acks it), so each job is acked with its
// follow-up once: the follow-ups' topic was pushed exactly as many jobs
// as there were, each body once, none lost, and the store checks clean.
func TestChaosFollowUpsBrokerKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos test")
	}
	t.Parallel()
	jobs, every := chaosSettings(t)
	srv := redistest.Start(t)
	b := harness.StartBroker(t, srv.URL())
	store := harness.Checker(t, srv.URL())
	retry := func(call func() bool) { harness.RetryWhileDown(t, call) }
	down := func(a harness.Answer, err error) bool { return err != nil || a.Code == 503 }

	var producing sync.WaitGroup
	producing.Go(func() {
		for i := range jobs {
			retry(func() bool {
				a, err := b.Do("POST", "/api/v1/jobs", fmt.Sprintf(`{"id":"wf-%d","topic":"wf","body":"x","TTR":2}`, i))
				if down(a, err) {
					return false
				}
				if a.Code != 201 && a.Code != 409 { // 409: a push cut off by a kill had stored it
					t.Errorf("push wf-%d: %d %v", i, a.Code, a.Body)
				}
				return true
			})
		}
	})
	var acked, followed sync.Map // first hop's ids acked; second hop's bodies acked
	var cut atomic.Int64         // acks a kill cut off, then found done (404)
	stopFirst := harness.Consume(t, 3, func() {
		a, err := b.Do("GET", "/api/v1/pop?topic=wf&timeout=0.5", ``)
		if down(a, err) || a.Code != 200 {
			time.Sleep(20 * time.Millisecond)
			return
		}
		id := a.Body["id"].(string)
		path := fmt.Sprintf("/api/v1/jobs/%s/ack?attempt=%v", id, a.Body["attempt"])
		body := fmt.Sprintf(`{"push":[{"topic":"wf-next","body":"after %s","TTR":2}]}`, id)
		retry(func() bool {
			r, err := b.Do("POST", path, body)
			if down(r, err) {
				return false
			}
			switch r.Code {
			case 200:
				acked.Store(id, true)
			case 404:
				cut.Add(1)
				acked.Store(id, true)
			case 409: // its TTR ran out: the next delivery acks it
			default:
				t.Errorf("ack %s: %d %v", id, r.Code, r.Body)
			}
			return true
		})
	})
	defer stopFirst()
	stopSecond := harness.Consume(t, 2, func() {
		a, err := b.Do("GET", "/api/v1/pop?topic=wf-next&timeout=0.5", ``)
		if down(a, err) || a.Code != 200 {
			time.Sleep(20 * time.Millisecond)
			return
		}
		followed.Store(a.Body["body"], true)
		path := fmt.Sprintf("/api/v1/jobs/%s/ack?attempt=%v", a.Body["id"], a.Body["attempt"])
		retry(func() bool { r, err := b.Do("POST", path, ``); return !down(r, err) })
	})
	defer stopSecond()
	missing := func(set *sync.Map, name func(i int) string) func() []string {
		return func() (out []string) {
			for i := range jobs {
				if _, ok := set.Load(name(i)); !ok {
					out = append(out, name(i))
				}
			}
			return out
		}
	}
	first := missing(&acked, func(i int) string { return fmt.Sprintf("wf-%d", i) })
	second := missing(&followed, func(i int) string { return fmt.Sprintf("after wf-%d", i) })
	// Kills while jobs are pushed, acked and followed up, not only while
	// they are pushed: at most 12, each after the broker served a while.
	faults := 0
	for ; faults < 12 && len(second()) > 0 && !t.Failed(); faults++ {
		time.Sleep(every)
		b.Kill()
		time.Sleep(100 * time.Millisecond)
		b.Start()
	}
	producing.Wait()
	drain(t, b, "acked with their follow-up", first)
	drain(t, b, "followed up", second)
	stopFirst()
	stopSecond()
	// A push retried after a kill cut its answer off may store its id
	// again once the first job was acked and its id freed (at-least-once
	// for a producer that retries: runChaos), and each such job is acked
	// with its follow-up too: one follow-up for each job stored.
	stored, next := b.Must(200, "GET", "/api/v1/topics/wf", ``), b.Must(200, "GET", "/api/v1/topics/wf-next", ``)
	if next["total_jobs"] != stored["total_jobs"] || stored["total_jobs"].(float64) < float64(jobs) {
		t.Fatalf("%v follow-ups pushed for %v jobs stored (%d pushed), want exactly one each: %v", next["total_jobs"], stored["total_jobs"], jobs, next)
	}
	harness.MustBeConsistent(t, store, "after the chaos")
	t.Logf("%d jobs, %v stored, %d kills, %d acks cut off and found done", jobs, stored["total_jobs"], faults, cut.Load())
	if faults == 0 {
		t.Fatal("no fault struck: the load ended too soon to test anything")
	}
}
