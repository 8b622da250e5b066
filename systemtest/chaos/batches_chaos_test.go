package chaos

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gmq/gmq/internal/redistest"
	"github.com/gmq/gmq/systemtest/harness"
)

// Batches across SIGKILLs on a 3-master Cluster: batches of jobs in three
// topics (buckets on different masters), each with on_complete, on_success
// and on_death; consumers on two brokers fail a quarter of the deliveries,
// each job dying at its third failure, and the brokers are killed in turn
// while the batches are created and worked. Every batch whose create was
// answered 201 gets on_complete exactly once, after every one of its jobs
// ended (completed or dead, as each job's view says when the callback is
// popped); on_success exactly once when none died, never otherwise; on_death
// exactly once when one died. A create cut off by a kill may leave a batch
// no one was told of: it may finish later (its sweep), never twice.
func TestChaosBatchesOnCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos test")
	}
	t.Parallel()
	const batches, size = 200, 50
	c := redistest.StartCluster(t, 3, 0)
	brokers := []*harness.BrokerProc{harness.StartBroker(t, c.URL()), harness.StartBroker(t, c.URL())}
	store := harness.Checker(t, c.URL())
	fleet := &harness.InTurn{T: t, Brokers: brokers, Limit: 20 * time.Second} // DoWithin: past a pop's 5.5 s on a loaded machine
	pick, down, call := fleet.Pick, harness.IsDown, fleet.Call
	const job = `"ttr":3,"keep_completed":600,"retry":{"max_attempts":3,"backoff":"fixed","base":0.05}`
	topics := []string{"chaos-bt-a", "chaos-bt-b", "chaos-bt-c"}
	members := sync.Map{}      // batch id -> its members' ids, once its create answered 201
	ended := harness.Ending(t) // the loops below stop once the test has failed
	var producing sync.WaitGroup
	producing.Go(func() {
		for i := range batches {
			var jobs []string
			for k := range size {
				jobs = append(jobs, fmt.Sprintf(`{"topic":%q,"body":"b%d-%d",%s}`, topics[(i+k)%3], i, k, job))
			}
			cb := func(kind string) string {
				return fmt.Sprintf(`{"topic":"chaos-bt-%s","body":"%s","ttr":3,"with_result":true}`, kind, kind)
			}
			body := fmt.Sprintf(`{"jobs":[%s],"on_complete":%s,"on_success":%s,"on_death":%s}`,
				strings.Join(jobs, ","), cb("complete"), cb("success"), cb("death"))
			for {
				if ended.Err() != nil {
					return
				}
				a, err := harness.DoWithin(t, pick(), fleet.Limit, "POST", "/api/v1/batches", body)
				if err == nil && a.Code == 201 {
					members.Store(a.Body["id"].(string), a.Body["ids"].([]any))
					break
				}
				if !down(a, err) && a.Code != 500 {
					t.Errorf("create batch %d: %d %v", i, a.Code, a.Body)
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
	})
	var mu sync.Mutex
	callbacks := map[string]map[string]map[string]bool{} // kind -> batch -> callback job ids
	var early []string
	var failed, odd atomic.Int64
	stop := harness.Consume(t, 4, func() {
		// In a random order each time, so that batches finish as the
		// work goes (a pop takes from the first topic that has a job).
		order := []string{"chaos-bt-a", "chaos-bt-b", "chaos-bt-c", "chaos-bt-complete", "chaos-bt-success", "chaos-bt-death"}
		rand.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		a, err := harness.DoWithin(t, pick(), fleet.Limit, "POST", "/api/v1/pop", `{"topics":["`+strings.Join(order, `","`)+`"],"timeout":0.5}`)
		if down(a, err) || a.Code != 200 {
			if err == nil && a.Code != 204 && odd.Add(1) <= 10 {
				t.Logf("pop: %d %v %v", a.Code, a.Body, err)
			}
			time.Sleep(20 * time.Millisecond)
			return
		}
		id, attempt, topic := a.Body["id"].(string), a.Body["attempt"], a.Body["topic"].(string)
		if kind, ok := strings.CutPrefix(topic, "chaos-bt-"); ok && len(kind) > 1 {
			raw, _ := json.Marshal(a.Body["body"])
			var v struct {
				Result struct {
					Batch string `json:"batch"`
				} `json:"result"`
			}
			_ = json.Unmarshal(raw, &v)
			batch := v.Result.Batch
			if kind == "complete" {
				producing.Wait() // members is complete
				list, _ := members.Load(batch)
				ids, _ := list.([]any)
				for _, m := range ids {
					if st := call("GET", "/api/v1/jobs/"+m.(string), ``).Body["state"]; st != "completed" && st != "dead" {
						mu.Lock()
						early = append(early, fmt.Sprintf("batch %s's on_complete before its job %v ended (%v)", batch, m, st))
						mu.Unlock()
					}
				}
			}
			mu.Lock()
			if callbacks[kind] == nil {
				callbacks[kind] = map[string]map[string]bool{}
			}
			if callbacks[kind][batch] == nil {
				callbacks[kind][batch] = map[string]bool{}
			}
			callbacks[kind][batch][id] = true
			mu.Unlock()
			call("POST", fmt.Sprintf("/api/v1/jobs/%s/ack?attempt=%v", id, attempt), ``)
			return
		}
		if rand.IntN(4) == 0 {
			failed.Add(1)
			call("POST", fmt.Sprintf("/api/v1/jobs/%s/fail?attempt=%v", id, attempt), `{"error":"chaos"}`)
			return
		}
		call("POST", fmt.Sprintf("/api/v1/jobs/%s/ack?attempt=%v", id, attempt), ``)
	})
	defer stop()
	left := func() (out []string) {
		mu.Lock()
		defer mu.Unlock()
		members.Range(func(k, _ any) bool {
			if len(callbacks["complete"][k.(string)]) == 0 {
				out = append(out, k.(string))
			}
			return true
		})
		if len(out) == 0 && countMap(&members) < batches {
			out = append(out, "(still creating)")
		}
		return out
	}
	// unfinished is left with the jobs not yet ended, one entry each, so
	// that a wait for it sees the work go on before any batch is done.
	unfinished := func() []string {
		out := left()
		if len(out) == 0 {
			return nil
		}
		for _, topic := range topics {
			if a, err := brokers[0].Do("GET", "/api/v1/topics/"+topic, ``); err == nil && a.Code == 200 {
				for _, state := range []string{"ready", "delayed", "reserved"} {
					n, _ := a.Body[state].(float64)
					for k := 0; k < int(n); k++ {
						out = append(out, topic)
					}
				}
			}
		}
		return out
	}
	kills := 0
	for ; kills < 8 && len(left()) > 0 && !t.Failed(); kills++ {
		time.Sleep(500 * time.Millisecond)
		b := brokers[kills%2]
		b.Kill()
		time.Sleep(100 * time.Millisecond)
		b.Start()
	}
	producing.Wait()
	waitLeft := func() []string {
		out := left()
		for i, id := range out {
			if i < 3 && id != "(still creating)" {
				t.Logf("batch %s: %v", id, brokers[0].Must(200, "GET", "/api/v1/batches/"+id, ``))
			}
		}
		return out
	}
	if brokertestSettle(t, unfinished) > 0 {
		waitLeft()
		for _, topic := range append(topics, "chaos-bt-complete", "chaos-bt-success", "chaos-bt-death") {
			a, _ := brokers[0].Do("GET", "/api/v1/topics/"+topic, ``)
			t.Logf("%s: %v", topic, a.Body)
		}
		for _, body := range []string{`{"topics":["chaos-bt-c"],"timeout":0.5}`, `{"topics":["chaos-bt-a","chaos-bt-b","chaos-bt-c","chaos-bt-complete","chaos-bt-success","chaos-bt-death"],"timeout":0.5}`} {
			a, err := brokers[0].Do("POST", "/api/v1/pop", body)
			t.Logf("pop %s: %d %v %v", body, a.Code, a.Body, err)
		}
		buf := make([]byte, 1<<22)
		for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			if strings.Contains(g, "batches_chaos_test.go") && !strings.Contains(g, "runtime.Stack") {
				t.Logf("goroutine: %s", g)
			}
		}
		for _, b := range brokers {
			lines := strings.Split(b.Log.String(), "\n")
			var warn []string
			for _, l := range lines {
				if strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") {
					warn = append(warn, l)
				}
			}
			t.Logf("broker %s: %d warnings, the last: %s", b.Addr, len(warn), strings.Join(warn[max(0, len(warn)-8):], "\n"))
		}
	}
	drain(t, brokers[0], "batches whose on_complete came", unfinished)
	// Done is final: each batch's deaths say which of on_success and
	// on_death must come, a moment after on_complete at most.
	died := map[string]bool{}
	members.Range(func(k, _ any) bool {
		id := k.(string)
		v := brokers[0].Must(200, "GET", "/api/v1/batches/"+id, ``)
		if v["state"] != "done" || v["total"] != float64(size) || v["pending"] != 0.0 {
			t.Errorf("batch %s: %v, want done with %d jobs", id, v, size)
		}
		died[id] = v["dead"].(float64) > 0
		return true
	})
	harness.WaitUntil(t, "every batch's on_success or on_death", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for id, d := range died {
			if kind := map[bool]string{true: "death", false: "success"}[d]; len(callbacks[kind][id]) == 0 {
				return false
			}
		}
		return true
	})
	stop()
	mu.Lock()
	defer mu.Unlock()
	if len(early) > 0 {
		t.Fatalf("callbacks before their batch ended: %v", early[:min(5, len(early))])
	}
	for kind, byBatch := range callbacks {
		for batch, ids := range byBatch {
			if len(ids) != 1 {
				t.Errorf("batch %s: %s pushed %d times (%v)", batch, kind, len(ids), ids)
			}
		}
	}
	dead := 0
	for id, d := range died {
		if d {
			dead++
		}
		if got := len(callbacks["success"][id]); (got == 1) == d {
			t.Errorf("batch %s: died %v, on_success pushed %d times", id, d, got)
		}
		if got := len(callbacks["death"][id]); (got == 1) != d {
			t.Errorf("batch %s: died %v, on_death pushed %d times", id, d, got)
		}
	}
	harness.MustBeConsistent(t, store, "after the chaos")
	t.Logf("%d batches of %d, %d with a death, %d kills, %d failures", batches, size, dead, kills, failed.Load())
	if kills < 3 {
		t.Fatalf("%d kills: the load ended too soon to test the faults", kills)
	}
}

func countMap(m *sync.Map) int {
	n := 0
	m.Range(func(_, _ any) bool { n++; return true })
	return n
}
