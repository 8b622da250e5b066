package upgrade

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gmq/gmq/internal/redistest"
	"github.com/gmq/gmq/pool"
	"github.com/gmq/gmq/systemtest/harness"
)

// formatOneCommit is the last commit whose broker reads and writes only
// store format 1 (pool.StoreFormat = 1), and records itself in gmq:meta:
// the previous version a rolling upgrade starts from.
const formatOneCommit = "31ee744adab17774cbc5d7e9682bec2e1e8004c8"

// A rolling upgrade from store format 1 to 2 under load: a format 1 broker
// and a format 2 broker on one Redis, producers and consumers on both. While
// the old one runs, the store stays at format 1 and nothing is written the
// new way (the old broker could not read it); once it stops, the store is
// raised, new jobs keep short bodies in their records, and the migration
// moves the old ones. No job is lost or delivered twice (every job's TTR is
// long), and the store checks clean.
func TestRollingUpgradeOfTheStoreFormat(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an older broker and runs a load through an upgrade")
	}
	t.Parallel()
	start := time.Now()
	old := harness.BuildAt(t, formatOneCommit)
	t.Logf("%v: the format 1 broker built", time.Since(start))
	srv := redistest.Start(t)
	a := harness.StartBrokerOf(t, srv.URL(), old) // first: a fresh store takes the newest format its broker reads
	b := harness.StartBroker(t, srv.URL())
	ctx := context.Background()
	client, err := pool.Dial(ctx, srv.URL(), 5*time.Second, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	hget := func(field string) string {
		v, _ := client.Do(ctx, client.B().Hget().Key("gmq:meta").Field(field).Build()).ToString()
		return v
	}
	hlen := func(key string) int64 {
		var n int64
		for bucket := range 4 {
			got, err := client.Do(ctx, client.B().Hlen().Key(fmt.Sprintf("gmq:{b%d}:%s", bucket, key)).Build()).AsInt64()
			if err != nil {
				t.Fatal(err)
			}
			n += got
		}
		return n
	}
	if f := hget("format"); f != "1" {
		t.Fatalf("with a format 1 broker running, the store is at format %q", f)
	}

	// The load: producers push numbered jobs through both brokers, in
	// batches; consumers pop and ack through both.
	var (
		pushed, acked, doubled atomic.Int64
		seen                   sync.Map // body -> delivered
		producing, draining    atomic.Bool
		mu                     sync.Mutex // guards brokers: a stops
		brokers                = []*harness.BrokerProc{a, b}
		producers, consumers   sync.WaitGroup
	)
	live := func(i int) *harness.BrokerProc {
		mu.Lock()
		defer mu.Unlock()
		return brokers[i%len(brokers)]
	}
	produce := func(prefix string) {
		producing.Store(true)
		for p := range 2 {
			producers.Go(func() {
				for n := 0; producing.Load(); n++ {
					if pushed.Load()-acked.Load() > 1000 { // a bounded load: a backlog of about a thousand
						time.Sleep(5 * time.Millisecond)
						continue
					}
					var jobs []string
					for k := range 20 {
						jobs = append(jobs, fmt.Sprintf(`{"topic":"up","body":"%s%d-%d-%d","ttr":600}`, prefix, p, n, k))
					}
					// Counted when the broker says 201; a failed batch (a
					// broker stopping) made no job, or is retried under new
					// bodies and counted then.
					if r, err := live(n+p).Do("POST", "/api/v1/jobs/batch", `{"jobs":[`+strings.Join(jobs, ",")+`]}`); err == nil && r.Code == 201 {
						pushed.Add(20)
					}
				}
			})
		}
	}
	for range 4 {
		consumers.Go(func() {
			for n := 0; !(draining.Load() && acked.Load() >= pushed.Load()); n++ {
				r, err := live(n).Do("POST", "/api/v1/pop", `{"topics":["up"],"timeout":1}`)
				if err != nil || r.Code != 200 {
					continue
				}
				body, _ := r.Body["body"].(string)
				if _, dup := seen.LoadOrStore(body, true); dup {
					doubled.Add(1)
				}
				token, _ := r.Body["token"].(string)
				id, _ := r.Body["id"].(string)
				for range 500 { // through any live broker, until one answers
					if ack, err := live(n+1).Do("POST", "/api/v1/jobs/"+id+"/ack", fmt.Sprintf(`{"token":%q}`, token)); err == nil && ack.Code == 200 {
						acked.Add(1)
						break
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
		})
	}
	produce("p")
	harness.WaitUntil(t, "two thousand jobs through both brokers", func() bool { return acked.Load() > 2000 })
	if f := hget("format"); f != "1" {
		t.Fatalf("under load with a format 1 broker: the store is at format %q", f)
	}
	// Nothing was written the new way: every job has its body in the
	// bodies hash (counted in one script, as consumers go on).
	counts, err := client.Do(ctx, client.B().Eval().Script(`local jobs, bodies = 0, 0
for b = 0, 3 do
  jobs = jobs + redis.call('HLEN', 'gmq:{b' .. b .. '}:jobs')
  bodies = bodies + redis.call('HLEN', 'gmq:{b' .. b .. '}:bodies')
end
return {jobs, bodies}`).Numkeys(0).Build()).AsIntSlice()
	if err != nil || counts[0] == 0 || counts[0] != counts[1] {
		t.Fatalf("with the format 1 broker running: records and bodies in the hash %v (%v), want one each", counts, err)
	}
	producing.Store(false)
	producers.Wait()
	produce("q")

	// The old broker stops (cleanly: its record goes), and the store moves on.
	mu.Lock()
	brokers = []*harness.BrokerProc{b}
	mu.Unlock()
	if err := a.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	a.ExitsCleanly(t, time.Minute, "SIGTERM")
	t.Logf("%v: the format 1 broker stopped", time.Since(start))
	newest := strconv.Itoa(pool.StoreFormat) // 1 to the newest at once: each format's step is the same pass
	harness.WaitUntil(t, "the store raised to format "+newest, func() bool { return hget("format") == newest })
	harness.WaitUntil(t, "the migration over", func() bool { return hget("migrated") == newest })
	t.Logf("%v: the store migrated", time.Since(start))
	producing.Store(false)
	producers.Wait()
	draining.Store(true)
	consumers.Wait()

	t.Logf("%v: drained; pushed %d, acked %d", time.Since(start), pushed.Load(), acked.Load())
	if got, want := acked.Load(), pushed.Load(); got != want || doubled.Load() != 0 {
		t.Fatalf("pushed %d, acked %d, delivered twice %d", want, got, doubled.Load())
	}
	var delivered int64
	seen.Range(func(any, any) bool { delivered++; return true })
	if delivered != pushed.Load() {
		t.Fatalf("%d distinct bodies delivered of %d pushed", delivered, pushed.Load())
	}
	if n := hlen("bodies"); n != 0 {
		t.Fatalf("%d bodies left in the bodies hash after the migration", n)
	}
	harness.MustBeConsistent(t, harness.Checker(t, srv.URL()), "after the upgrade")
}
