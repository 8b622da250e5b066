package brokers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beanstalkd/go-beanstalk"

	"github.com/gmq/gmq/internal/redistest"
	"github.com/gmq/gmq/job"
	"github.com/gmq/gmq/pool"
	"github.com/gmq/gmq/systemtest/harness"
)

// Flow control across brokers and front ends (issue 23): a topic's limits
// live in Redis and every pop script obeys them, so they hold for any mix
// of consumers on any number of brokers.

// flowTTR is the TTR of the rate test's jobs: long enough that none is
// delivered twice, and the reservation instant is the job's due less it.
const flowTTR = 600 * time.Second

// Two brokers, 50 consumers (HTTP long polls and beanstalkd reserves, on
// both brokers), a topic with rate = 100 and burst = 10: over 20 s they are
// given 100 jobs a second within 5%, no one-second window (on Redis's clock)
// holds more than rate + burst, and Redis's commands a second while they
// wait stay flat: a waiting consumer is woken when a token comes, not by
// polling.
func TestRateAcrossBrokersAndProtocols(t *testing.T) {
	if testing.Short() {
		t.Skip("a 20 s load test")
	}
	const (
		rate, burst = 100, 10
		runFor      = 20 * time.Second
		consumers   = 50
	)
	// The brokers are built without the race detector: this measures
	// delivery in time, which its slowdown would distort.
	bin, err := harness.PlainBinary()
	if err != nil {
		t.Fatal(err)
	}
	srv := redistest.Start(t)
	brokers := []*harness.BrokerProc{harness.StartBroker(t, srv.URL()), harness.StartBroker(t, srv.URL())}
	for _, b := range brokers {
		b.RestartWith(bin, "[redis]\nbuckets = 4\n")
	}
	brokers[0].Must(200, "PUT", "/api/v1/topics/limited/config", fmt.Sprintf(`{"rate": %d, "burst": %d}`, rate, burst))
	for range 3 {
		jobs := make([]string, 1000)
		for i := range jobs {
			jobs[i] = fmt.Sprintf(`{"topic":"limited","body":"x","ttr":%d}`, int(flowTTR.Seconds()))
		}
		brokers[1].Must(201, "POST", "/api/v1/jobs/batch", `{"jobs":[`+strings.Join(jobs, ",")+`]}`)
	}

	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	fail := func(err error) {
		if ctx.Err() == nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
	}
	for i := range consumers {
		b := brokers[i%2]
		if i%4 < 2 {
			wg.Go(func() { // over HTTP
				for ctx.Err() == nil {
					if a, err := b.Do("GET", "/api/v1/pop?topic=limited&timeout=2", ""); err != nil || (a.Code != 200 && a.Code != 204) {
						fail(fmt.Errorf("HTTP pop: %d %v", a.Code, err))
						return
					}
				}
			})
			continue
		}
		wg.Go(func() { // over beanstalkd
			conn, err := beanstalk.Dial("tcp", b.Beanstalk)
			if err != nil {
				fail(err)
				return
			}
			// Closed after the count: a beanstalkd connection's reserved
			// jobs go back to ready when it closes.
			t.Cleanup(func() { conn.Close() })
			tubes := beanstalk.NewTubeSet(conn, "limited")
			for ctx.Err() == nil {
				if _, _, err := tubes.Reserve(2 * time.Second); err != nil && !strings.Contains(err.Error(), "timeout") {
					fail(fmt.Errorf("beanstalkd reserve: %v", err))
					return
				}
			}
		})
	}
	// Redis's commands a second, over the second and the last quarter of the run.
	client, err := pool.Dial(context.Background(), srv.URL(), 5*time.Second, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	commands := func() int64 {
		info, err := client.Do(context.Background(), client.B().Info().Section("stats").Build()).ToString()
		if err != nil {
			t.Fatal(err)
		}
		return infoField(t, info, "total_commands_processed")
	}
	time.Sleep(runFor / 4)
	c1 := commands()
	time.Sleep(runFor / 4)
	c2 := commands()
	time.Sleep(runFor / 4)
	c3 := commands()
	time.Sleep(runFor / 4)
	c4 := commands()
	stop()
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("consumers failed: %v", errs)
	}
	early, late := float64(c2-c1)/(runFor/4).Seconds(), float64(c4-c3)/(runFor/4).Seconds()

	times := reservedAt(t, brokers[0], "limited")
	if len(times) == 0 {
		t.Fatal("nothing was delivered")
	}
	start := times[0]
	in := 0
	for _, at := range times {
		if at.Before(start.Add(runFor)) {
			in++
		}
	}
	most, at := 0, time.Time{}
	for i := range times {
		j, _ := slices.BinarySearchFunc(times, times[i].Add(time.Second), func(a, b time.Time) int { return a.Compare(b) })
		if j-i > most {
			most, at = j-i, times[i]
		}
	}
	t.Logf("%d jobs in the first %v (%.1f/s), at most %d in one second (from %v); Redis: %.0f commands/s in the second quarter, %.0f in the last",
		in, runFor, float64(in)/runFor.Seconds(), most, at.Sub(start), early, late)
	if got := float64(in) / runFor.Seconds(); got < rate*0.95 || got > rate*1.05 {
		t.Errorf("delivered %.1f jobs a second, want %d within 5%%", got, rate)
	}
	if most > rate+burst {
		t.Errorf("%d jobs in one second, want at most rate + burst = %d", most, rate+burst)
	}
	// Flat, and far below polling: 50 consumers each asking at every token
	// would be 5,000 pops a second, each a script of about ten commands.
	if late > early*1.5 || late > 10*consumers*rate {
		t.Errorf("Redis ran %.0f commands a second in the second quarter and %.0f in the last: the waiting consumers poll", early, late)
	}
}

// infoField reads a number from an INFO reply.
func infoField(t *testing.T, info, field string) int64 {
	t.Helper()
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			var n int64
			fmt.Sscan(v, &n)
			return n
		}
	}
	t.Fatalf("INFO without %s: %q", field, info)
	return 0
}

// reservedAt lists when each of the topic's reserved jobs was reserved, on
// Redis's clock (its TTR deadline less flowTTR), sorted.
func reservedAt(t *testing.T, b *harness.BrokerProc, topic string) []time.Time {
	t.Helper()
	var out []time.Time
	for offset := 0; ; offset += 500 {
		page := b.Must(200, "GET", fmt.Sprintf("/api/v1/topics/%s/jobs?state=reserved&offset=%d&limit=500", topic, offset), "")
		jobs, _ := page["jobs"].([]any)
		for _, j := range jobs {
			due, err := time.Parse(time.RFC3339Nano, fmt.Sprint(j.(map[string]any)["due"]))
			if err != nil {
				t.Fatalf("a reserved job's due: %v", err)
			}
			out = append(out, due.Add(-flowTTR))
		}
		if len(jobs) < 500 {
			break
		}
	}
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	return out
}

// max_reserved = 3 holds while brokers are SIGKILLed and TTRs run out: ten
// consumers over HTTP and beanstalkd on two brokers, some acking and some
// letting the TTR expire, never have more than 3 of the topic's jobs
// reserved (sampled from Redis every few ms), the store stays consistent,
// and every job is acked in the end: the topic counts 200 deletes (a
// consumer may not hear of its ack when its broker is killed), and holds none.
func TestMaxReservedThroughKills(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos test")
	}
	t.Parallel() // correctness, not timing: it may share the cores with the others like it
	const jobs, most = 200, 3
	srv := redistest.Start(t)
	brokers := []*harness.BrokerProc{harness.StartBroker(t, srv.URL()), harness.StartBroker(t, srv.URL())}
	store := harness.Checker(t, srv.URL())
	brokers[0].Must(200, "PUT", "/api/v1/topics/capped/config", fmt.Sprintf(`{"max_reserved": %d}`, most))
	batch := make([]string, jobs)
	for i := range batch {
		batch[i] = `{"topic":"capped","body":"x","ttr":1}`
	}
	brokers[1].Must(201, "POST", "/api/v1/jobs/batch", `{"jobs":[`+strings.Join(batch, ",")+`]}`)

	ctx, stop := context.WithTimeout(context.Background(), 90*time.Second)
	defer stop()
	var acked atomic.Int64 // acks whose answer came back
	var wg sync.WaitGroup
	for i := range 10 {
		b := brokers[i%2]
		expire := i%5 == 0 // these let every third job's TTR run out
		if i%3 == 0 {
			wg.Go(func() { beanstalkConsumer(ctx, t, b, "capped", expire, &acked) })
			continue
		}
		wg.Go(func() { httpConsumer(ctx, t, b, "capped", expire, &acked) })
	}
	// Sample the reserved count until the topic is empty, and strike: a
	// broker killed and started again every 1.5 s, in turn, eight times.
	peak, faults, left := int64(0), 0, int64(jobs)
	strike := time.NewTicker(1500 * time.Millisecond)
	defer strike.Stop()
	sample := time.NewTicker(5 * time.Millisecond)
	defer sample.Stop()
	var st job.TopicStats
	for ctx.Err() == nil && left > 0 {
		select {
		case <-sample.C:
			var err error
			if st, err = store.TopicStats(context.Background(), "capped"); err == nil {
				peak = max(peak, st.Reserved)
				left = st.Ready + st.Delayed + st.Reserved + st.Buried + st.Dead
			}
		case <-strike.C:
			if faults == 8 {
				continue
			}
			b := brokers[faults%2]
			b.Kill()
			time.Sleep(100 * time.Millisecond)
			b.Start()
			faults++
		}
	}
	stop()
	wg.Wait()
	t.Logf("%d faults, %d acks answered, %d deletes counted, at most %d reserved at once", faults, acked.Load(), st.Deletes, peak)
	if peak > most {
		t.Errorf("%d jobs reserved at once, max_reserved is %d", peak, most)
	}
	if peak < most {
		t.Errorf("at most %d reserved at once: the consumers never reached max_reserved = %d", peak, most)
	}
	// A broker killed loses the totals it counted in its last second
	// (pool/totals.go): fewer deletes may be counted, never more.
	if left > 0 || st.Deletes > jobs {
		t.Errorf("the topic holds %d jobs and counts %d deletes, want 0 and at most %d", left, st.Deletes, jobs)
	}
	harness.MustBeConsistent(t, store, "after the kills")
}

// drained says whether topic holds no ready, delayed or reserved job now.
func drained(store *pool.Pool, topic string) bool {
	st, err := store.TopicStats(context.Background(), topic)
	return err == nil && st.Ready+st.Delayed+st.Reserved == 0
}

// topicStats reads topic's stats from the store.
func topicStats(t *testing.T, store *pool.Pool, topic string) job.TopicStats {
	t.Helper()
	st, err := store.TopicStats(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// httpConsumer pops and acks topic's jobs over HTTP until ctx ends, holding
// each a little; with expire it leaves every third job for its TTR to run
// out. A request its broker leaves unanswered far past its 1 s wait fails
// the test with the broker's goroutines (DoWithin): a run of the root
// package once hung here, both brokers of TestGroupMaxReservedAcrossBrokers
// leaving 1 s waits unanswered for minutes (issue 49, not yet understood).
func httpConsumer(ctx context.Context, t *testing.T, b *harness.BrokerProc, topic string, expire bool, acked *atomic.Int64) {
	for n := 0; ctx.Err() == nil; n++ {
		a, err := harness.DoWithin(t, b, consumerLimit, "GET", "/api/v1/pop?topic="+topic+"&timeout=1", "")
		if err != nil || a.Code != 200 {
			time.Sleep(50 * time.Millisecond) // a broker down, or nothing yet
			continue
		}
		if expire && n%3 == 0 {
			continue // its TTR runs out: ready again a second later
		}
		time.Sleep(time.Duration(n%4) * 20 * time.Millisecond)
		id, attempt := fmt.Sprint(a.Body["id"]), fmt.Sprint(a.Body["attempt"])
		if r, err := harness.DoWithin(t, b, consumerLimit, "POST", "/api/v1/jobs/"+id+"/ack", `{"attempt":`+attempt+`}`); err == nil && r.Code == 200 {
			acked.Add(1)
		}
	}
}

// consumerLimit is how long a consumer's call may go unanswered before its
// broker is taken for hung: far past [server] request_timeout (5 s) and
// the calls' own 1 s waits, on a loaded machine.
const consumerLimit = 30 * time.Second

// beanstalkConsumer reserves and deletes topic's jobs over beanstalkd
// until ctx ends, dialling again when its broker is killed; with expire it
// leaves every third job for its TTR to run out. A reserve its broker leaves
// unanswered far past its 1 s timeout fails the test with the broker's
// goroutines, as httpConsumer's calls do.
func beanstalkConsumer(ctx context.Context, t *testing.T, b *harness.BrokerProc, topic string, expire bool, acked *atomic.Int64) {
	for n := 0; ctx.Err() == nil; {
		nc, err := net.Dial("tcp", b.Beanstalk)
		if err != nil {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		conn := beanstalk.NewConn(nc)
		tubes := beanstalk.NewTubeSet(conn, topic)
		for ctx.Err() == nil {
			_ = nc.SetDeadline(time.Now().Add(consumerLimit))
			id, _, err := tubes.Reserve(time.Second)
			var netErr net.Error
			if errors.As(err, &netErr) && netErr.Timeout() {
				b.Quit()
				time.Sleep(time.Second)
				t.Errorf("reserve-with-timeout 1 on %s: no answer in %v; its log:\n%s", b.Beanstalk, consumerLimit, b.Log)
				break
			}
			if err != nil {
				if errors.Is(err, beanstalk.ErrTimeout) || errors.Is(err, beanstalk.ErrDeadline) {
					continue
				}
				break // the broker went away: dial again
			}
			n++
			if expire && n%3 == 0 {
				continue
			}
			if conn.Delete(id) == nil {
				acked.Add(1)
			}
		}
		conn.Close()
	}
}
