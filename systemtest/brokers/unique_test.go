package brokers

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beanstalkd/go-beanstalk"

	"github.com/gmq/gmq/internal/redistest"
	"github.com/gmq/gmq/systemtest/harness"
)

// Unique pushes across brokers (issue 23): a key lives in Redis and the push
// script settles it, so pushes racing on two brokers and two protocols make
// one job per key, whatever the mode.

const (
	uniqueKeys    = 20
	uniquePushers = 8 // per key, half on each broker
)

// raceUnique has uniquePushers pushers per key push to topic at once, half
// through each broker, with unique mode, and returns every answer by key.
func raceUnique(t *testing.T, brokers []*harness.BrokerProc, topic, mode string, delay int) map[int][]harness.Answer {
	t.Helper()
	var mu sync.Mutex
	answers := map[int][]harness.Answer{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for k := range uniqueKeys {
		for p := range uniquePushers {
			b := brokers[p%2]
			wg.Go(func() {
				<-start
				body := fmt.Sprintf(`{"topic":%q,"body":"k%d-p%d","delay":%d,"unique":{"key":"k%d","for":600,"mode":%q}}`, topic, k, p, delay, k, mode)
				a, err := b.Do("POST", "/api/v1/jobs", body)
				if err != nil {
					t.Errorf("push %s: %v", body, err)
					return
				}
				mu.Lock()
				answers[k] = append(answers[k], a)
				mu.Unlock()
			})
		}
	}
	close(start)
	wg.Wait()
	return answers
}

// TestUniqueAcrossBrokers races pushes of 20 keys, 8 each, on two broker
// processes, for each mode: one job per key, one 201 per key, and every
// other answer names that job (409 for reject, 200 "replaced" or
// "debounced"); the bodies and due times are the pushes'.
func TestUniqueAcrossBrokers(t *testing.T) {
	t.Parallel() // correctness, not timing: it may share the cores with the others like it
	srv := redistest.Start(t)
	brokers := []*harness.BrokerProc{harness.StartBroker(t, srv.URL()), harness.StartBroker(t, srv.URL())}
	store := harness.Checker(t, srv.URL())
	for _, c := range []struct {
		mode, other string // the answer of every push but the first
		code        int
	}{
		{"reject", "", 409},
		{"replace", "replaced", 200},
		{"debounce", "debounced", 200},
	} {
		topic := "u-" + c.mode
		began := time.Now()
		answers := raceUnique(t, brokers, topic, c.mode, 3600)
		for k, as := range answers {
			created, id := 0, ""
			for _, a := range as {
				if a.Code == 201 {
					created++
					id = fmt.Sprint(a.Body["id"])
				}
			}
			if created != 1 {
				t.Fatalf("%s key k%d: %d pushes made a job, want 1: %v", c.mode, k, created, as)
			}
			for _, a := range as {
				if a.Code != 201 && (a.Code != c.code || fmt.Sprint(a.Body["id"]) != id || (c.other != "" && a.Body["unique"] != c.other)) {
					t.Fatalf("%s key k%d: an answer %d %v, want %d naming %s", c.mode, k, a.Code, a.Body, c.code, id)
				}
			}
			j := brokers[0].Must(200, "GET", "/api/v1/jobs/"+id, "")
			if body, _ := j["body"].(string); !strings.HasPrefix(body, fmt.Sprintf("k%d-", k)) {
				t.Fatalf("%s key k%d: the job's body %q is not one of its pushes'", c.mode, k, body)
			}
			if due, err := time.Parse(time.RFC3339Nano, fmt.Sprint(j["due"])); err != nil || due.Before(began.Add(3599*time.Second)) {
				t.Fatalf("%s key k%d: due %v (%v), want an hour after a push", c.mode, k, j["due"], err)
			}
		}
		st, err := store.TopicStats(context.Background(), topic)
		if err != nil || st.Delayed != uniqueKeys || st.Ready+st.Reserved != 0 {
			t.Fatalf("%s: the topic holds %d delayed, %d ready (%v), want %d delayed", c.mode, st.Delayed, st.Ready, err, uniqueKeys)
		}
	}
	harness.MustBeConsistent(t, store, "after the races")
}

// TestUniqueReplaceWhileConsumed: producers on two brokers replace jobs of
// 5 keys while consumers on both pop and ack them, and a broker is killed
// and started again in the middle. A reserved job is never replaced (a
// fresh one takes its key), so no push is lost: every push that made a job
// is acked (deleted) once, no body is acked twice, and the store stays
// consistent.
func TestUniqueReplaceWhileConsumed(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos test")
	}
	t.Parallel() // correctness, not timing: it may share the cores with the others like it
	srv := redistest.Start(t)
	brokers := []*harness.BrokerProc{harness.StartBroker(t, srv.URL()), harness.StartBroker(t, srv.URL())}
	store := harness.Checker(t, srv.URL())
	ctx, stop := context.WithTimeout(context.Background(), 60*time.Second)
	defer stop()

	var created, replaced, failed atomic.Int64
	var producers sync.WaitGroup
	for p := range 6 {
		b := brokers[p%2]
		producers.Go(func() {
			for n := range 60 {
				body := fmt.Sprintf(`{"topic":"live","body":"p%d-%d","ttr":5,"unique":{"key":"k%d","for":600,"mode":"replace"}}`, p, n, n%5)
				a, err := b.Do("POST", "/api/v1/jobs", body)
				switch {
				case err != nil || a.Code >= 500:
					failed.Add(1) // its broker was killed: the push may or may not have happened
					time.Sleep(50 * time.Millisecond)
				case a.Code == 201:
					created.Add(1)
				case a.Code == 200:
					replaced.Add(1)
				default:
					t.Errorf("push: %d %v", a.Code, a.Body)
				}
			}
		})
	}
	var delivered sync.Map // body -> deliveries acked
	var acked atomic.Int64
	var consumers sync.WaitGroup
	for i := range 4 {
		b := brokers[i%2]
		consumers.Go(func() {
			for ctx.Err() == nil {
				a, err := b.Do("GET", "/api/v1/pop?topic=live&timeout=1", "")
				if err != nil || a.Code != 200 {
					time.Sleep(20 * time.Millisecond)
					continue
				}
				id, attempt := fmt.Sprint(a.Body["id"]), fmt.Sprint(a.Body["attempt"])
				if r, err := b.Do("POST", "/api/v1/jobs/"+id+"/ack", `{"attempt":`+attempt+`}`); err == nil && r.Code == 200 {
					n, _ := delivered.LoadOrStore(fmt.Sprint(a.Body["body"]), new(atomic.Int64))
					n.(*atomic.Int64).Add(1)
					acked.Add(1)
				}
			}
		})
	}
	time.Sleep(300 * time.Millisecond)
	brokers[0].Kill()
	time.Sleep(200 * time.Millisecond)
	brokers[0].Start()
	producers.Wait()
	for ctx.Err() == nil && !drained(store, "live") { // the TTRs of acks lost to the kill run out
		time.Sleep(100 * time.Millisecond)
	}
	stop()
	consumers.Wait()
	st := topicStats(t, store, "live")
	t.Logf("%d pushes made jobs, %d replaced a waiting job, %d lost their answer to the kill; %d acks answered, %d deletes counted",
		created.Load(), replaced.Load(), failed.Load(), acked.Load(), st.Deletes)
	if st.Ready+st.Delayed+st.Reserved+st.Buried+st.Dead != 0 {
		t.Fatalf("the topic still holds jobs: %+v", st)
	}
	// Every job made was deleted once; a push whose answer was lost may
	// have made one more. The killed broker lost the deletes it counted in
	// its last second (pool/totals.go): fewer may be counted, never more.
	if st.Deletes > created.Load()+failed.Load() {
		t.Errorf("%d deletes counted, %d pushes made jobs (and %d unanswered)", st.Deletes, created.Load(), failed.Load())
	}
	if replaced.Load() == 0 || created.Load() <= 5 {
		t.Errorf("the race never replaced a waiting job (%d) or never made a fresh one after a pop (%d jobs)", replaced.Load(), created.Load())
	}
	delivered.Range(func(body, n any) bool {
		if n.(*atomic.Int64).Load() > 1 {
			t.Errorf("body %v acked %d times", body, n.(*atomic.Int64).Load())
		}
		return true
	})
	harness.MustBeConsistent(t, store, "after the race")
}

// A tube with unique_from = body, put to over beanstalkd on two brokers at
// once: one job per body, and every put answers its id.
func TestUniqueFromBodyAcrossBrokers(t *testing.T) {
	t.Parallel() // correctness, not timing: it may share the cores with the others like it
	srv := redistest.Start(t)
	brokers := []*harness.BrokerProc{harness.StartBroker(t, srv.URL()), harness.StartBroker(t, srv.URL())}
	brokers[0].Must(200, "PUT", "/api/v1/topics/dedup/config", `{"unique_from": "body"}`)
	ids := make([][]uint64, 10) // by body
	var mu sync.Mutex
	var wg sync.WaitGroup
	for p := range 8 {
		b := brokers[p%2]
		wg.Go(func() {
			conn, err := net.Dial("tcp", b.Beanstalk)
			if err != nil {
				t.Error(err)
				return
			}
			c := beanstalk.NewConn(conn)
			defer c.Close()
			tube := beanstalk.NewTube(c, "dedup")
			for n := range 10 {
				id, err := tube.Put([]byte(fmt.Sprintf("body-%d", n)), 1, 0, time.Minute)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				ids[n] = append(ids[n], id)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for n, got := range ids {
		for _, id := range got {
			if id != got[0] {
				t.Fatalf("body-%d: puts answered jobs %v, want one", n, got)
			}
		}
	}
	st := brokers[1].Must(200, "GET", "/api/v1/topics/dedup", "")
	if st["ready"] != 10.0 {
		t.Fatalf("the tube holds %v ready jobs, want 10", st["ready"])
	}
}
