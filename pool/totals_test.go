package pool

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/redis/rueidis"

	"github.com/gmq/gmq/job"
)

// The batch calls leave total_jobs, total_reserves and total_deletes to the
// broker (totals.go): this broker reads them exact at once; another one
// reads them once they are written; a write that fails keeps them; a
// topic forgotten before the write is not made again by it.
func TestTotalsCountedByTheBroker(t *testing.T) {
	p, ctx := newPool(t)
	other, _ := openPool(t, rueidis.ClientOption{InitAddress: []string{redis.Addr}}, Options{}) // a second broker
	spec := job.Spec{Topic: "counted", Body: "x", TTR: 60e9}
	for range 3 {
		mustPush(t, p, ctx, spec)
	}
	for i := range 2 {
		got, err := p.Pop(ctx, []string{spec.Topic})
		if err != nil || got.Job == nil {
			t.Fatalf("pop: %+v %v", got, err)
		}
		if i == 0 {
			if err := p.Ack(ctx, strconv.FormatUint(got.Job.ID, 10), got.Job.Attempt(), ""); err != nil {
				t.Fatal(err)
			}
		}
	}
	all := job.Counters{Jobs: 3, Reserves: 2, Deletes: 1}
	topic := job.TopicStats{Jobs: 3, Reserves: 2, Deletes: 1}
	checkTotals(t, "this broker, before the write", p, ctx, all, topic)
	// The topic's total_jobs is written by the push (it registers the topic).
	checkTotals(t, "another broker, before the write", other, ctx, job.Counters{}, job.TopicStats{Jobs: 3})

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := p.FlushTotals(cancelled); err == nil {
		t.Error("a write with its context ended: no error")
	}
	checkTotals(t, "this broker, after a failed write", p, ctx, all, topic)
	checkTotals(t, "another broker, after a failed write", other, ctx, job.Counters{}, job.TopicStats{Jobs: 3})

	if err := p.FlushTotals(ctx); err != nil {
		t.Fatal(err)
	}
	checkTotals(t, "this broker, after the write", p, ctx, all, topic)
	checkTotals(t, "another broker, after the write", other, ctx, all, topic)

	// A topic emptied and forgotten before its totals are written.
	gone := job.Spec{Topic: "forgotten", Body: "x", TTR: 60e9}
	id := mustPush(t, p, ctx, gone)
	if err := p.FlushTotals(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := p.Pop(ctx, []string{gone.Topic})
	if err != nil || got.Job == nil || got.Job.ID != id {
		t.Fatalf("pop: %+v %v", got, err)
	}
	if err := p.Ack(ctx, strconv.FormatUint(id, 10), got.Job.Attempt(), ""); err != nil {
		t.Fatal(err)
	}
	if forgot, err := p.ForgetTopic(ctx, gone.Topic); err != nil || !forgot {
		t.Fatalf("forget: %v %v", forgot, err)
	}
	if err := p.FlushTotals(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := other.TopicStats(ctx, gone.Topic); !errors.Is(err, job.ErrNotFound) {
		t.Errorf("a forgotten topic after its totals' write: %v, want it not found", err)
	}
}

// checkTotals compares the totals the broker counts, of every topic (all)
// and of the topic "counted".
func checkTotals(t *testing.T, who string, p *Pool, ctx context.Context, all job.Counters, topic job.TopicStats) {
	t.Helper()
	got, err := p.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.Jobs != all.Jobs || got.Reserves != all.Reserves || got.Deletes != all.Deletes {
		t.Errorf("%s: totals pushed %d, reserved %d, deleted %d; want %d, %d, %d", who,
			got.Jobs, got.Reserves, got.Deletes, all.Jobs, all.Reserves, all.Deletes)
	}
	ts, err := p.TopicStats(ctx, "counted")
	if err != nil {
		t.Fatal(err)
	}
	if ts.Jobs != topic.Jobs || ts.Reserves != topic.Reserves || ts.Deletes != topic.Deletes {
		t.Errorf("%s: the topic's totals pushed %d, reserved %d, deleted %d; want %d, %d, %d", who,
			ts.Jobs, ts.Reserves, ts.Deletes, topic.Jobs, topic.Reserves, topic.Deletes)
	}
}
