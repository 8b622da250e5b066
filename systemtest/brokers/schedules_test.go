package brokers

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gmq/gmq/internal/redistest"
	"github.com/gmq/gmq/job"
	"github.com/gmq/gmq/systemtest/harness"
)

// Cron schedules without a leader (issue 23): every broker's bucket timers
// may fire a schedule, and its push script makes each fire happen once.

// runSchedule runs a schedule of one job a second on brokers for about
// runFor, calling strike at each second's instant, and returns the whole
// seconds it ran.
func runSchedule(t *testing.T, brokers []*harness.BrokerProc, runFor time.Duration, strike func(n int)) (seconds int) {
	t.Helper()
	brokers[0].Must(200, "PUT", "/api/v1/schedules/tick", `{"cron":"* * * * * *","job":{"topic":"ticks","body":"tick"}}`)
	start := time.Now()
	for n := 0; time.Since(start) < runFor; n++ {
		next := time.Now().Truncate(time.Second).Add(time.Second)
		time.Sleep(time.Until(next))
		if strike != nil {
			strike(n)
		}
	}
	for paused := false; !paused; time.Sleep(20 * time.Millisecond) { // through a broker that is up
		for _, b := range brokers {
			if a, err := b.Do("PUT", "/api/v1/schedules/tick", `{"paused":true}`); err == nil && a.Code == 200 {
				paused = true
				break
			}
		}
	}
	return int(time.Since(start).Seconds())
}

// tickJobs lists the ready jobs of "ticks" and the seconds (Redis's clock) they were made in.
func tickJobs(t *testing.T, redisURL string) map[int64]int {
	t.Helper()
	store := harness.Checker(t, redisURL)
	jobs, _, err := store.ListJobs(context.Background(), "ticks", job.Ready, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	per := map[int64]int{}
	for _, j := range jobs {
		per[j.Created.Unix()]++
	}
	harness.MustBeConsistent(t, store, "after the schedule")
	return per
}

// checkTicks says whether per (jobs by the second they were made in) has
// one job a second over about seconds, none missed, none twice.
func checkTicks(t *testing.T, per map[int64]int, seconds int) {
	t.Helper()
	total, first, last := 0, int64(0), int64(0)
	for s, n := range per {
		total += n
		if first == 0 || s < first {
			first = s
		}
		last = max(last, s)
	}
	t.Logf("%d jobs over %d s: %v", total, seconds, per)
	if total < seconds-1 || total > seconds+1 {
		t.Errorf("%d jobs in about %d s of a schedule of one a second", total, seconds)
	}
	for s := first; s <= last; s++ {
		if per[s] != 1 {
			t.Errorf("second %d: %d jobs, want 1", s-first, per[s])
		}
	}
}

// "* * * * * *" on three broker processes for 10 s: 10 jobs, not 30.
func TestScheduleOnThreeBrokers(t *testing.T) {
	srv := redistest.Start(t)
	brokers := []*harness.BrokerProc{harness.StartBroker(t, srv.URL()), harness.StartBroker(t, srv.URL()), harness.StartBroker(t, srv.URL())}
	seconds := runSchedule(t, brokers, 10*time.Second, nil)
	checkTicks(t, tickJobs(t, srv.URL()), seconds)
}

// A broker SIGKILLed at the instant of a fire, each second in turn, on
// three brokers: no fire is lost and none happens twice.
func TestScheduleSurvivesKillsAtTheFire(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos test")
	}
	srv := redistest.Start(t)
	brokers := []*harness.BrokerProc{harness.StartBroker(t, srv.URL()), harness.StartBroker(t, srv.URL()), harness.StartBroker(t, srv.URL())}
	var restarts sync.WaitGroup
	seconds := runSchedule(t, brokers, 8*time.Second, func(n int) {
		b := brokers[n%3]
		b.Kill()
		restarts.Go(func() {
			time.Sleep(300 * time.Millisecond) // down for a while, then back
			b.Start()
		})
	})
	restarts.Wait()
	checkTicks(t, tickJobs(t, srv.URL()), seconds)

}

// With no broker up for 4 s, a schedule of one a second misses four fires:
// the broker back fires once for them, then goes on from then, not four
// times at once.
func TestScheduleCatchesUpOnce(t *testing.T) {
	srv := redistest.Start(t)
	b := harness.StartBroker(t, srv.URL())
	b.Must(200, "PUT", "/api/v1/schedules/tick", `{"cron":"* * * * * *","job":{"topic":"ticks","body":"tick"}}`)
	b.Must(200, "GET", "/api/v1/pop?topic=ticks&timeout=3", "") // it fires
	b.Kill()
	down := time.Now()
	store := harness.Checker(t, srv.URL())
	before, err := store.TopicStats(context.Background(), "ticks")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(4500 * time.Millisecond) // at least four fires missed
	back := time.Now()
	b.Start()
	madeSinceKill := func() int64 {
		after, err := store.TopicStats(context.Background(), "ticks")
		if err != nil {
			t.Fatal(err)
		}
		return after.Jobs - before.Jobs
	}
	harness.WaitUntil(t, "the catch-up fire", func() bool { return madeSinceKill() >= 1 })
	b.Must(200, "PUT", "/api/v1/schedules/tick", `{"paused":true}`)
	backFor := time.Since(back)
	made := madeSinceKill()
	t.Logf("down %v, back for %v: %d jobs since the kill", back.Sub(down).Round(time.Millisecond), backFor.Round(time.Millisecond), made)
	// One catch-up fire, then those on time: at most one for each whole
	// second that began while it was back. However long a loaded machine
	// took to start it, the four missed fires would be made at once: two or
	// more jobs in one second.
	if onTime := int64(backFor/time.Second) + 1; made > 1+onTime {
		t.Errorf("%d jobs after the downtime, back for %v: want the catch-up fire and at most %d on time", made, backFor, onTime)
	}
	for second, n := range tickJobs(t, srv.URL()) {
		if n > 1 && time.Unix(second+1, 0).After(down) {
			t.Errorf("%d jobs made in the second at %v: the missed fires were made at once", n, time.Unix(second, 0))
		}
	}
}

// A reload whose conf.ini has a bad schedule applies nothing of it (the
// topic settings neither), says why, and keeps the schedules there were.
func TestReloadWithABadScheduleChangesNothing(t *testing.T) {
	t.Parallel() // correctness, not timing: it may share the cores with the others like it
	srv := redistest.Start(t)
	b := harness.StartBroker(t, srv.URL())
	b.Kill()
	write := func(text string) {
		t.Helper()
		if err := os.WriteFile(b.Conf, []byte("[redis]\nbuckets = 4\n"+text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("[schedule.good]\ncron = 0 3 * * *\ntopic = r\nbody = x\n")
	b.Start()
	b.Must(200, "GET", "/api/v1/schedules/good", "")
	write("[topic.abc]\nmax_items = 5\n[schedule.bad]\ncron = 0 3 * *\ntopic = r\nbody = x\n")
	if line, err := harness.Exchange(b.Kestrel, "reload\r\n"); err != nil || !strings.Contains(line, "schedule.bad") {
		t.Fatalf("kestrel reload: %q %v", line, err)
	}
	b.Must(200, "GET", "/api/v1/schedules/good", "")
	if cfg := b.Must(200, "GET", "/api/v1/topics/abc/config", ""); len(cfg["file"].(map[string]any)) != 0 {
		t.Fatalf("abc's settings were applied: %v", cfg)
	}
}

// Three clients PUT one every-second schedule 100 times each through two
// brokers, moving its job across topics of different buckets (issue 31:
// orphan hashes stayed behind, unlisted, which DELETE did not remove, and a
// later PUT that moved the schedule into an orphan's bucket kept its stale
// next with no due entry: it never fired again). After the race exactly one
// hash is left, in the bucket the index names, due; DELETE leaves none; a
// new PUT fires.
func TestScheduleRacingPutsLeaveOneSchedule(t *testing.T) {
	t.Parallel() // correctness, not timing: it may share the cores with the others like it
	srv := redistest.Start(t)
	brokers := []*harness.BrokerProc{harness.StartBroker(t, srv.URL()), harness.StartBroker(t, srv.URL())}
	hashes := func() []string { // every bucket's hash of the schedule "race"
		out, err := exec.Command("redis-cli", "-u", srv.URL(), "--scan", "--pattern", "gmq:{b*}:schedule:race").Output()
		if err != nil {
			t.Fatalf("redis-cli --scan: %v", err)
		}
		return strings.Fields(string(out))
	}
	// Sixteen buckets, as by default, and the three clients' PUTs of each
	// round started together, each to a topic of its own.
	for _, b := range brokers {
		b.Kill()
	}
	if out, err := exec.Command("redis-cli", "-u", srv.URL(), "FLUSHALL").CombinedOutput(); err != nil { // the store was made with 4
		t.Fatalf("FLUSHALL: %v %s", err, out)
	}
	for _, b := range brokers {
		b.RestartWith("", "[redis]\nbuckets = 16\n[bucket]\nmax_sleep = 200ms\n")
	}
	for round := range 100 {
		var wg sync.WaitGroup
		start := make(chan struct{})
		for c := range 3 {
			wg.Go(func() {
				<-start
				body := fmt.Sprintf(`{"cron":"* * * * * *","job":{"topic":"race-%d","body":"x"}}`, (round*3+c)%32)
				if a, err := brokers[c%2].Do("PUT", "/api/v1/schedules/race", body); err != nil || a.Code != 200 {
					t.Errorf("PUT of round %d, client %d: %d %v %v", round, c, a.Code, a.Body, err)
				}
			})
		}
		close(start)
		wg.Wait()
	}
	s := brokers[0].Must(200, "GET", "/api/v1/schedules/race", "")
	topic := s["job"].(map[string]any)["topic"].(string)
	t.Logf("hashes after the race: %v (topic %s)", hashes(), topic)
	if left := hashes(); len(left) != 1 {
		t.Fatalf("after the race, the schedule's hashes: %v, want one (of %s's bucket)", left, topic)
	}
	// It fires: a job of its topic, though it moved 300 times.
	harness.WaitUntil(t, "the raced schedule fires", func() bool {
		a, err := brokers[1].Do("GET", "/api/v1/topics/"+topic, "")
		return err == nil && a.Code == 200 && a.Body["ready"].(float64) >= 1
	})
	brokers[1].Must(200, "DELETE", "/api/v1/schedules/race", "")
	if left := hashes(); len(left) != 0 {
		t.Fatalf("after DELETE: %v", left)
	}
	brokers[0].Must(404, "GET", "/api/v1/schedules/race", "")
	brokers[0].Must(200, "PUT", "/api/v1/schedules/race", `{"cron":"* * * * * *","job":{"topic":"race-new","body":"x"}}`)
	harness.WaitUntil(t, "a new PUT fires", func() bool {
		a, err := brokers[1].Do("GET", "/api/v1/topics/race-new", "")
		return err == nil && a.Code == 200 && a.Body["ready"].(float64) >= 1
	})
	harness.MustBeConsistent(t, harness.Checker(t, srv.URL()), "after the race")
}
