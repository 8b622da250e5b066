package chaos

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gmq/gmq/internal/redistest"
	"github.com/gmq/gmq/systemtest/harness"
)

// Failing consumers while the broker is SIGKILLed every few moments: a
// third of the jobs fail twice before they succeed, one in ten always
// fails, the rest succeed at once; each job may be tried 3 times (a fail or
// a TTR that runs out, as a kill may cause, is a try). The topic keeps
// completed jobs (keep_completed, issue 34), each with its ack's result,
// keeps each job's history (job_history) and streams its events (events),
// which a consumer reads across the kills, resuming from its last id. At
// the end every job is completed (with its own result) or dead, none is
// lost, none completed twice, no job is dead before it failed 3 times,
// each job's history ends as the job did and counts its deliveries, and
// the events consumer saw each job's end exactly once.
func TestChaosFailingConsumers(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos test")
	}
	t.Parallel() // correctness, not timing: it may share the cores with the others like it
	jobs, every := chaosSettings(t)
	jobs /= 2
	srv := redistest.Start(t)
	b := harness.StartBroker(t, srv.URL())
	store := harness.Checker(t, srv.URL())
	b.Must(200, "PUT", "/api/v1/topics/flaky/config", `{"keep_completed": 3600, "max_completed": 0, "job_history": 100, "events": true}`)
	events := watchEvents(b, "flaky")
	defer events.close()
	const producers, consumers, maxAttempts = 4, 4, 3
	alwaysFails := func(i int) bool { return i%10 == 1 }
	failsTwice := func(i int) bool { return i%3 == 0 && !alwaysFails(i) }

	retry := func(call func() bool) { harness.RetryWhileDown(t, call) }
	down := func(a harness.Answer, err error) bool { return err != nil || a.Code == 503 }

	var stored sync.Map
	var fails atomic.Int64
	var producing sync.WaitGroup
	for p := range producers {
		producing.Go(func() {
			for i := p; i < jobs; i += producers {
				id := fmt.Sprintf("job-%d", i)
				body := fmt.Sprintf(`{"id":%q,"topic":"flaky","body":"x","TTR":2,"retry":{"max_attempts":%d,"backoff":"fixed","base":0.05}}`, id, maxAttempts)
				retry(func() bool {
					a, err := b.Do("POST", "/api/v1/jobs", body)
					if down(a, err) {
						return false
					}
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
		a, err := b.Do("GET", "/api/v1/pop?topic=flaky&timeout=0.5", ``)
		if down(a, err) || a.Code != 200 {
			time.Sleep(20 * time.Millisecond)
			return
		}
		id := a.Body["id"].(string)
		i, _ := strconv.Atoi(strings.TrimPrefix(id, "job-"))
		failures := int(a.Body["failures"].(float64))
		fail := alwaysFails(i) || (failsTwice(i) && failures < 2)
		verb, payload := "ack", fmt.Sprintf(`{"result":{"job":%q}}`, id)
		if fail {
			verb, payload = "fail", `{"error":"chaos"}`
			fails.Add(1)
		}
		path := fmt.Sprintf("/api/v1/jobs/%s/%s?attempt=%v", id, verb, a.Body["attempt"])
		retry(func() bool {
			r, err := b.Do("POST", path, payload)
			if down(r, err) {
				return false
			}
			// 409: the TTR ran out meanwhile and another delivery carries
			// on. An ack retried after a kill cut off its answer finds its
			// job completed, and answers 200.
			return true
		})
	})
	defer stopConsumers()

	strike := func() {
		b.Kill()
		time.Sleep(100 * time.Millisecond)
		b.Start()
	}
	faults := strikeWhile(&producing, every, 0, strike)
	if faults == 0 {
		strike() // the pushes outran the first fault: strike while the consumers work
		faults++
	}

	// Every stored job ends completed or dead.
	dead := map[string]float64{}     // id -> failures
	completed := map[string]string{} // id -> its result
	list := func(set string, each func(m map[string]any)) {
		for offset := 0; ; offset += 1000 { // page by page
			page := b.Must(200, "GET", fmt.Sprintf("/api/v1/topics/flaky/%s?offset=%d&limit=1000", set, offset), ``)
			for _, j := range page["jobs"].([]any) {
				each(j.(map[string]any))
			}
			if offset+1000 >= int(page["total"].(float64)) {
				break
			}
		}
	}
	drain(t, b, "completed or dead", func() (missing []string) {
		clear(dead)
		clear(completed)
		list("dead", func(m map[string]any) { dead[m["id"].(string)] = m["failures"].(float64) })
		list("completed", func(m map[string]any) { completed[m["id"].(string)] = fmt.Sprint(m["result"]) })
		stored.Range(func(k, _ any) bool {
			_, done := completed[k.(string)]
			if _, gone := dead[k.(string)]; !done && !gone {
				missing = append(missing, k.(string))
			}
			return true
		})
		return missing
	})
	stopConsumers()
	harness.MustBeConsistent(t, store, "after the chaos")
	wantDead := 0
	for i := range jobs {
		if alwaysFails(i) {
			wantDead++
			if _, ok := dead[fmt.Sprintf("job-%d", i)]; !ok {
				t.Errorf("job-%d always fails but is not dead", i)
			}
		}
	}
	for id, result := range completed {
		if want := fmt.Sprint(map[string]any{"job": id}); result != want {
			t.Errorf("%s completed with the result %s, want %s", id, result, want)
		}
	}
	// Each job's history ends as it did, after one reserved entry a
	// delivery; the events consumer saw its end once (none lost).
	harness.WaitUntil(t, "the events consumer caught up with every end", func() bool {
		for id := range completed {
			if n := countOf(events.events(id), "completed"); n == 0 {
				return false
			}
		}
		for id := range dead {
			if countOf(events.events(id), "dead") == 0 {
				return false
			}
		}
		return true
	})
	checked := 0
	for id := range completed {
		checkEnd(t, b, events, id, "completed")
		if checked++; checked >= 200 { // a sample: each is a request
			break
		}
	}
	for id := range dead {
		checkEnd(t, b, events, id, "dead")
	}
	if events.lost {
		t.Error("the events consumer was told events were lost: the run passed the streams' bound")
	}
	if st := b.Must(200, "GET", "/api/v1/topics/flaky", ``); int(st["total_completed"].(float64)) != len(completed) {
		t.Errorf("%v acks completed a job, %d jobs are completed: some completed twice", st["total_completed"], len(completed))
	}
	for id, failures := range dead {
		if failures < maxAttempts {
			t.Errorf("%s is dead after %v failures, before its %d attempts were spent", id, failures, maxAttempts)
		}
	}
	t.Logf("%d jobs, %d faults, %d fails reported, %d completed, %d dead (%d always fail; the others ran out of tries in the kills)",
		jobs, faults, fails.Load(), len(completed), len(dead), wantDead)
	if faults == 0 {
		t.Fatal("no fault struck: the load ended too soon to test anything")
	}
}

// checkEnd checks job id's history and events after it ended (end:
// "completed" or "dead"): its history's last entry is its end, its
// reserved entries are its deliveries, and the events saw its end once.
func checkEnd(t *testing.T, b *harness.BrokerProc, events *eventLog, id, end string) {
	t.Helper()
	j := b.Must(200, "GET", "/api/v1/jobs/"+id, ``)
	history, _ := j["history"].([]any)
	if len(history) == 0 {
		t.Errorf("%s: no history", id)
		return
	}
	reserved := 0
	for _, e := range history {
		if e.(map[string]any)["event"] == "reserved" {
			reserved++
		}
	}
	if last := history[len(history)-1].(map[string]any)["event"]; last != end {
		t.Errorf("%s is %s, its history ends with %v: %v", id, end, last, history)
	}
	if attempts := int(j["attempt"].(float64)); reserved != attempts {
		t.Errorf("%s: %d reserved entries in its history, %d deliveries", id, reserved, attempts)
	}
	if n := countOf(events.events(id), end); n != 1 {
		t.Errorf("%s: the events consumer saw its %s %d times: %v", id, end, n, events.events(id))
	}
}

func countOf(list []string, s string) int {
	n := 0
	for _, v := range list {
		if v == s {
			n++
		}
	}
	return n
}
