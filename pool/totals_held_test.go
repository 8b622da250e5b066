package pool

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/gmq/gmq/job"
)

// What held when 89031be (totals leave the hot path) was attacked: the
// totals on a Redis Cluster, reads that never go backwards under load, a
// batch answering an error after writes (and totals_diff_test.go: a mix of
// operations gives the totals it gave before 89031be).

// The totals' write on a Redis Cluster: one call per bucket, its keys in
// the bucket's slot; written totals read back by another broker.
func TestTotalsOnCluster(t *testing.T) {
	p, ctx, c := newClusterPoolWith(t, Options{})
	clientOpt, err := rueidis.ParseURL(c.URL())
	if err != nil {
		t.Fatal(err)
	}
	clientOpt.DisableRetry = true
	other, _ := openPool(t, clientOpt, Options{Buckets: 16})
	for i := range 40 {
		topic := "t" + strconv.Itoa(i%20) + "+c" // fanout children too
		if i%2 == 0 {
			topic = "t" + strconv.Itoa(i%20)
		}
		mustPush(t, p, ctx, job.Spec{Topic: topic, Body: "x", TTR: time.Minute})
		popAckFor(t, p, ctx, topic)
	}
	if err := p.FlushTotals(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := other.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.Jobs != 40 || got.Reserves != 40 || got.Deletes != 40 {
		t.Errorf("cluster: totals %d/%d/%d, want 40/40/40", got.Jobs, got.Reserves, got.Deletes)
	}
	ts, err := other.TopicStats(ctx, "t1+c")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("t1+c: %d/%d/%d", ts.Jobs, ts.Reserves, ts.Deletes)
}

// Stats read over and over while batches run and writes go on: no total
// goes backwards, and at the end each broker agrees.
func TestTotalsMonotonic(t *testing.T) {
	p, ctx := newPool(t)
	stop := make(chan struct{})
	var work, side sync.WaitGroup
	for g := range 6 {
		work.Go(func() {
			topic := "m" + strconv.Itoa(g)
			for range 150 {
				mustPush(t, p, ctx, job.Spec{Topic: topic, Body: "x", TTR: time.Minute, Priority: job.DefaultPriority})
				popAckFor(t, p, ctx, topic)
			}
		})
	}
	side.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(3 * time.Millisecond):
				_ = p.FlushTotals(ctx)
			}
		}
	})
	var bad []string
	side.Go(func() {
		var last job.Counters
		var lastT job.TopicStats
		for {
			select {
			case <-stop:
				return
			default:
			}
			s, err := p.Stats(ctx)
			if err == nil {
				if s.Jobs < last.Jobs || s.Reserves < last.Reserves || s.Deletes < last.Deletes {
					bad = append(bad, fmt.Sprintf("server %d/%d/%d after %d/%d/%d", s.Jobs, s.Reserves, s.Deletes, last.Jobs, last.Reserves, last.Deletes))
				}
				last = s
			}
			ts, err := p.TopicStats(ctx, "m0")
			if err == nil {
				if ts.Jobs < lastT.Jobs || ts.Reserves < lastT.Reserves || ts.Deletes < lastT.Deletes {
					bad = append(bad, fmt.Sprintf("m0 %d/%d/%d after %d/%d/%d", ts.Jobs, ts.Reserves, ts.Deletes, lastT.Jobs, lastT.Reserves, lastT.Deletes))
				}
				lastT = ts
			}
		}
	})
	work.Wait()
	close(stop)
	side.Wait()
	if len(bad) > 0 {
		t.Errorf("%d reads went backwards, first: %s", len(bad), bad[0])
	}
	if err := p.FlushTotals(ctx); err != nil {
		t.Fatal(err)
	}
	other, _ := otherPool(t)
	s, err := other.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.Jobs != 900 || s.Reserves != 900 || s.Deletes != 900 {
		t.Errorf("totals %d/%d/%d, want 900 each", s.Jobs, s.Reserves, s.Deletes)
	}
}

// A batch that answers an error after writes (an ack, then a pop that meets
// a ready member without a record): the ack's totals are written by the call,
// once.
func TestTotalsErrorAfterWrites(t *testing.T) {
	p, ctx := newPool(t)
	other, _ := otherPool(t)
	mustPush(t, p, ctx, job.Spec{Topic: "ea", Body: "x", TTR: time.Minute, Priority: job.DefaultPriority})
	j := mustPop(t, p, ctx, "ea")
	if err := p.FlushTotals(ctx); err != nil {
		t.Fatal(err)
	}
	b := p.keys.bucketOf("ea")
	if r, err := redis.Do("ZADD", p.keys.tag(b)+":ready:ea", "0", "77777"); err != nil {
		t.Fatalf("zadd: %q %v", r, err)
	}
	_, err := p.AckAndPop(ctx, strconv.FormatUint(j.ID, 10), j.Attempt(), "", []string{"ea"})
	t.Logf("ack+pop meeting a member without a record: %v", err)
	mine, _ := p.Stats(ctx)
	if err := p.FlushTotals(ctx); err != nil {
		t.Fatal(err)
	}
	theirs, _ := other.Stats(ctx)
	ts, _ := other.TopicStats(ctx, "ea")
	t.Logf("this broker %d/%d/%d; another after the write %d/%d/%d; topic %d/%d/%d", mine.Jobs, mine.Reserves, mine.Deletes,
		theirs.Jobs, theirs.Reserves, theirs.Deletes, ts.Jobs, ts.Reserves, ts.Deletes)
}
