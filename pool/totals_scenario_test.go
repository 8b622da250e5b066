package pool

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gmq/gmq/job"
)

// scenarioTotals are TestTotalsScenario's totals as the scripts counted them
// before the broker did (89031be^: the same mix, run there, gave this line).
const scenarioTotals = `server jobs=188 reserves=95 deletes=44; conc0=60/30/15; conc1=60/30/15; conc2=40/20/10; ` +
	`dst=topic "dst": not found; exp=4/1/0; orders=3/0/0; orders+audit=3/3/0; plain=4/4/4; popn=4/3/0; src=3/0/0; ttr0=4/4/0; uniq=3/0/0;`

// A fixed mix of every kind of batch operation (plain, TTR 0, pop_n,
// ack_pop, delete, unique pushes in each mode, fanout copies, expired jobs
// with client ids, concurrent consumers), batched and one a call: the
// totals are those the scripts counted themselves, read on this broker
// before the write and on another after it.
func TestTotalsScenario(t *testing.T) {
	for _, opts := range []Options{{}, {MaxOpsPerCall: 1}} {
		t.Run(fmt.Sprintf("maxops%d", opts.MaxOpsPerCall), func(t *testing.T) {
			p, ctx := newPoolWith(t, opts)
			other, _ := otherPool(t)
			if err := p.ApplyTopicConfig(ctx, nil, map[string]job.TopicConfig{"src": {"expire_to": "dst"}}); err != nil {
				t.Fatal(err)
			}
			pr := uint32(job.DefaultPriority)
			// plain, TTR 0, pop_n, ack_pop, delete
			for range 4 {
				mustPush(t, p, ctx, job.Spec{Topic: "plain", Body: "x", TTR: time.Minute, Priority: pr})
				mustPush(t, p, ctx, job.Spec{Topic: "ttr0", Body: "x", Priority: pr})
				mustPush(t, p, ctx, job.Spec{Topic: "popn", Body: "x", TTR: time.Minute, Priority: pr})
			}
			j := mustPop(t, p, ctx, "plain")
			for range 3 {
				got, err := p.AckAndPop(ctx, strconv.FormatUint(j.ID, 10), j.Attempt(), "", []string{"plain"})
				if err != nil || got.Job == nil {
					t.Fatalf("ackpop %+v %v", got, err)
				}
				j = got.Job
			}
			if err := p.Delete(ctx, strconv.FormatUint(j.ID, 10), 0); err != nil {
				t.Logf("delete: %v", err)
			}
			for range 4 {
				mustPop(t, p, ctx, "ttr0")
			}
			if got, err := p.PopN(ctx, []string{"popn"}, 3); err != nil {
				t.Fatal(err)
			} else {
				t.Logf("popn: %v + %d", got.Job != nil, len(got.Rest))
			}
			// unique
			for _, m := range []job.UniqueMode{job.UniqueReject, job.UniqueReplace, job.UniqueDebounce} {
				for range 3 {
					_, err := p.Push(ctx, job.Spec{Topic: "uniq", Body: "x", TTR: time.Minute, Priority: pr, Delay: time.Hour,
						Unique: &job.Unique{Key: "k" + string(m), For: time.Hour, Mode: m}})
					if err != nil {
						t.Logf("unique %s: %v", m, err)
					}
				}
			}
			// fanout
			mustPop(t, p, ctx, "orders+audit")
			for range 3 {
				mustPush(t, p, ctx, job.Spec{Topic: "orders", Body: "x", TTR: time.Minute, Priority: pr})
			}
			for range 3 {
				mustPop(t, p, ctx, "orders+audit")
			}
			// expiring, with client ids (DROPPED with TOTALS), and expire_to
			for i := range 3 {
				mustPush(t, p, ctx, job.Spec{Topic: "exp", ClientID: "cid" + strconv.Itoa(i), Body: "x", TTR: time.Minute, Priority: pr, Expires: time.Now().Add(50 * time.Millisecond)})
				mustPush(t, p, ctx, job.Spec{Topic: "src", ClientID: "sid" + strconv.Itoa(i), Body: "x", TTR: time.Minute, Priority: pr, Expires: time.Now().Add(50 * time.Millisecond)})
			}
			mustPush(t, p, ctx, job.Spec{Topic: "exp", Body: "live", TTR: time.Minute, Priority: pr})
			time.Sleep(150 * time.Millisecond)
			mustPop(t, p, ctx, "exp")
			mustPop(t, p, ctx, "src")
			mustPop(t, p, ctx, "dst")
			// concurrent batched pushes and pops
			var wg sync.WaitGroup
			for g := range 8 {
				wg.Go(func() {
					topic := "conc" + strconv.Itoa(g%3)
					for range 20 {
						_, _ = p.Push(ctx, job.Spec{Topic: topic, Body: "x", TTR: time.Minute, Priority: pr})
					}
					for i := range 10 {
						got, err := p.Pop(ctx, []string{topic})
						if err == nil && got.Job != nil && i%2 == 0 {
							_ = p.Ack(ctx, strconv.FormatUint(got.Job.ID, 10), got.Job.Attempt(), "")
						}
					}
				})
			}
			wg.Wait()
			mine := dumpTotals(t, p, ctx)
			if err := p.FlushTotals(ctx); err != nil {
				t.Fatal(err)
			}
			theirs := dumpTotals(t, other, ctx)
			if theirs != scenarioTotals {
				t.Errorf("totals\n%s\nwant, as the scripts counted them\n%s", theirs, scenarioTotals)
			}
			if mine != theirs {
				t.Errorf("this broker before the write and another after it differ:\n%s\n%s", mine, theirs)
			}
		})
	}
}

// dumpTotals reads the server's totals and those of the scenario's topics.
func dumpTotals(t *testing.T, p *Pool, ctx context.Context) string {
	t.Helper()
	s, err := p.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := fmt.Sprintf("server jobs=%d reserves=%d deletes=%d;", s.Jobs, s.Reserves, s.Deletes)
	topics := []string{"plain", "ttr0", "popn", "uniq", "orders", "orders+audit", "exp", "src", "dst", "conc0", "conc1", "conc2"}
	sort.Strings(topics)
	for _, name := range topics {
		ts, err := p.TopicStats(ctx, name)
		if err != nil {
			out += fmt.Sprintf(" %s=%v;", name, err)
			continue
		}
		out += fmt.Sprintf(" %s=%d/%d/%d;", name, ts.Jobs, ts.Reserves, ts.Deletes)
	}
	return out
}
