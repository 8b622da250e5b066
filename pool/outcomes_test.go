package pool

import (
	"errors"
	"testing"
	"time"

	"github.com/gmq/gmq/job"
	"github.com/gmq/gmq/lua"
)

func durationp(d time.Duration) *time.Duration { return &d }

// An ack completes its job where the topic, or the job itself, keeps
// completed jobs, or where it gives a result (keep_results, an hour when
// unset), and deletes it elsewhere; a job's own keep_completed wins, 0
// included, and so does a topic's keep_completed above 0, shorter or not.
// The ack says how long the job is kept.
func TestWhoKeepsCompletedJobs(t *testing.T) {
	p, ctx := newPool(t)
	for topic, cfg := range map[string]job.TopicConfig{
		"kept":      {"keep_completed": "60"},
		"short":     {"keep_results": "120"},
		"noresults": {"keep_results": "0"},
		"zero":      {"keep_completed": "0", "keep_results": "90"},
	} {
		if err := p.SetTopicConfig(ctx, topic, cfg); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name   string
		topic  string
		own    *time.Duration
		result string
		want   time.Duration // kept for; 0: deleted
	}{
		{"a topic that keeps none, an ack without a result", "plain", nil, "", 0},
		{"a topic that keeps none, an ack with a result", "plain", nil, `{"ok":true}`, job.DefaultKeepResults},
		{"keep_results set", "short", nil, `{"ok":true}`, 2 * time.Minute},
		{"keep_results set, an ack without a result", "short", nil, "", 0},
		{"keep_results 0", "noresults", nil, `{"ok":true}`, 0},
		{"keep_completed 0 leaves it to keep_results", "zero", nil, `1`, 90 * time.Second},
		{"a topic that keeps none, a job that asks", "plain", durationp(30 * time.Second), "", 30 * time.Second},
		{"a job that asks not, with a result", "plain", durationp(0), `{"ok":true}`, 0},
		{"a topic that keeps them", "kept", nil, "", time.Minute},
		{"a topic that keeps them, shorter than keep_results", "kept", nil, `{"ok":true}`, time.Minute},
		{"a topic that keeps them, a job that asks not", "kept", durationp(0), `{"ok":true}`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := mustPush(t, p, ctx, job.Spec{Topic: tc.topic, Body: "x", TTR: time.Minute, KeepCompleted: tc.own})
			j := mustPop(t, p, ctx, tc.topic)
			if j == nil || j.ID != id {
				t.Fatalf("pop: %+v", j)
			}
			kept, err := p.AckKept(ctx, num(id), j.Attempt(), tc.result)
			if err != nil {
				t.Fatal(err)
			}
			if kept != tc.want {
				t.Fatalf("the ack says the job is kept for %v, want %v", kept, tc.want)
			}
			got, err := p.Peek(ctx, num(id))
			switch {
			case tc.want == 0 && !errors.Is(err, job.ErrNotFound):
				t.Fatalf("after the ack: %+v %v, want it deleted", got, err)
			case tc.want > 0 && (err != nil || got.State != job.Completed || got.Result != tc.result || got.EndedAt.IsZero()):
				t.Fatalf("after the ack: %+v %v, want it completed with its result", got, err)
			}
			if tc.want > 0 { // a retried ack says how long is left
				again, err := p.AckKept(ctx, num(id), j.Attempt(), tc.result)
				if err != nil || again <= 0 || again > tc.want {
					t.Fatalf("a retried ack: kept for %v %v, want at most %v", again, err, tc.want)
				}
			}
			checkClean(t, p, ctx)
		})
	}
}

// Plain acks (no result, a topic that keeps nothing) leave nothing behind:
// after 200 of them the store holds the keys it held after the first, and
// no record; acks with results are what keep_results keeps.
func TestPlainAcksKeepNothing(t *testing.T) {
	p, ctx := newPool(t)
	cycle := func(result string) {
		t.Helper()
		id := mustPush(t, p, ctx, job.Spec{Topic: "plainacks", Body: "x", TTR: time.Minute})
		j := mustPop(t, p, ctx, "plainacks")
		if kept, err := p.AckKept(ctx, num(id), j.Attempt(), result); err != nil || (kept > 0) != (result != "") {
			t.Fatalf("ack with result %q: kept for %v %v", result, kept, err)
		}
	}
	b := p.keys.bucketOf("plainacks")
	var completedKey string // the topic's completed set, as the scripts are given it
	for i, slot := range lua.TopicKeys {
		if slot.Name == "completed" {
			completedKey = p.keys.withTopics(b, "plainacks")[bucketKeyCount+i]
		}
	}
	count := func() (keys, records, completed int64) {
		t.Helper()
		res := p.client.DoMulti(ctx, p.client.B().Dbsize().Build(),
			p.client.B().Hlen().Key(p.keys.buckets[b].jobs).Build(),
			p.client.B().Zcard().Key(completedKey).Build())
		var err [3]error
		keys, err[0] = res[0].AsInt64()
		records, err[1] = res[1].AsInt64()
		completed, err[2] = res[2].AsInt64()
		if e := errors.Join(err[:]...); e != nil {
			t.Fatal(e)
		}
		return keys, records, completed
	}
	cycle("")
	keys, _, _ := count()
	for range 200 {
		cycle("")
	}
	if k, r, c := count(); k != keys || r != 0 || c != 0 {
		t.Fatalf("after 201 plain acks: %d keys (%d after the first), %d records, %d completed; want nothing kept", k, keys, r, c)
	}
	for range 10 {
		cycle(`{"rows":1}`)
	}
	if _, r, c := count(); r != 10 || c != 10 {
		t.Fatalf("after 10 acks with results: %d records, %d completed, want 10 kept", r, c)
	}
	checkClean(t, p, ctx)
}

// A completed job keeps its client id and its result; an ack retried by
// the same delivery succeeds and changes nothing, another delivery's is
// stale; it counts in no pending limit; a delete removes it and its id.
func TestCompletedJob(t *testing.T) {
	p, ctx := newPool(t)
	if err := p.SetTopicConfig(ctx, "r", job.TopicConfig{"keep_completed": "600", "max_result": "20", "max_items": "1"}); err != nil {
		t.Fatal(err)
	}
	mustPush(t, p, ctx, job.Spec{Topic: "r", Body: "report 8812", TTR: time.Minute, ClientID: "report-8812"})
	j := mustPop(t, p, ctx, "r")
	if err := p.Ack(ctx, "report-8812", j.Attempt(), `"a result of more than twenty bytes"`); !errors.Is(err, job.ErrTooBig) ||
		!errors.As(err, new(*job.ResultTooBigError)) {
		t.Fatalf("a result over max_result: %v, want ErrTooBig", err)
	}
	if got, err := p.Peek(ctx, "report-8812"); err != nil || got.State != job.Reserved {
		t.Fatalf("after a refused ack: %+v %v, want it still reserved", got, err)
	}
	if err := p.Ack(ctx, "report-8812", j.Attempt(), `{"url":"/r/8812"}`); err != nil {
		t.Fatal(err)
	}
	for _, attempt := range []int{j.Attempt(), 0} {
		if err := p.Ack(ctx, "report-8812", attempt, `"another"`); err != nil {
			t.Fatalf("an ack retried (attempt %d): %v, want it done", attempt, err)
		}
	}
	if err := p.Ack(ctx, "report-8812", j.Attempt()+1, ""); !errors.As(err, new(*job.StaleError)) {
		t.Fatalf("an ack of another delivery: %v, want stale", err)
	}
	if _, err := p.Touch(ctx, "report-8812", j.Attempt()); !errors.Is(err, job.ErrNotReserved) {
		t.Fatalf("a touch of a completed job: %v, want a state error", err)
	}
	got, err := p.Peek(ctx, "report-8812")
	if err != nil || got.State != job.Completed || got.Result != `{"url":"/r/8812"}` || got.Body != "report 8812" || got.Attempt() != 1 {
		t.Fatalf("the completed job: %+v %v", got, err)
	}
	st, err := p.TopicStats(ctx, "r")
	if err != nil || st.Completed != 1 || st.CompletedTotal != 1 || st.Bytes != 0 || st.Deletes != 1 {
		t.Fatalf("topic stats: %+v %v, want 1 completed, counted as a delete, and no bytes", st, err)
	}
	mustPush(t, p, ctx, job.Spec{Topic: "r", Body: "next", TTR: time.Minute}) // max_items 1: the completed one is not counted
	checkClean(t, p, ctx)
	if err := p.Delete(ctx, "report-8812", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Resolve(ctx, "report-8812"); !errors.Is(err, job.ErrNotFound) {
		t.Fatalf("its client id after the delete: %v, want it gone", err)
	}
	checkClean(t, p, ctx)
}

// beanstalkd's delete from another connection sees a completed job as gone.
func TestDeleteUnreservedOfACompletedJob(t *testing.T) {
	p, ctx := newPool(t)
	id := mustPush(t, p, ctx, job.Spec{Topic: "b", Body: "x", TTR: time.Minute, KeepCompleted: durationp(time.Minute)})
	j := mustPop(t, p, ctx, "b")
	if err := p.Ack(ctx, num(id), j.Attempt(), ""); err != nil {
		t.Fatal(err)
	}
	if err := p.DeleteUnreserved(ctx, num(id)); !errors.Is(err, job.ErrNotFound) {
		t.Fatalf("delete: %v, want not found", err)
	}
}

// The completed set lists newest first, keeps max_completed (dropping
// those due to go first, with their client ids), and its jobs can be
// pushed again: ready, their results forgotten, their attempts counted on.
func TestCompletedListCapAndRetry(t *testing.T) {
	p, ctx := newPool(t)
	if err := p.SetTopicConfig(ctx, "c", job.TopicConfig{"keep_completed": "600", "max_completed": "2"}); err != nil {
		t.Fatal(err)
	}
	ids := []string{"c-1", "c-2", "c-3"}
	for _, id := range ids {
		mustPush(t, p, ctx, job.Spec{Topic: "c", Body: id, TTR: time.Minute, ClientID: id})
		j := mustPop(t, p, ctx, "c")
		if err := p.Ack(ctx, id, j.Attempt(), `"`+id+`"`); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond) // a later completion, a later score: Redis's clock is in ms
	}
	list, total, err := p.ListJobs(ctx, "c", job.Completed, 0, 10)
	if err != nil || total != 2 || len(list) != 2 || list[0].PublicID() != "c-3" || list[1].PublicID() != "c-2" {
		t.Fatalf("the completed list: %+v %d %v, want c-3 then c-2", list, total, err)
	}
	if _, err := p.Resolve(ctx, "c-1"); !errors.Is(err, job.ErrNotFound) {
		t.Fatalf("c-1, dropped by max_completed: %v, want its id gone", err)
	}
	checkClean(t, p, ctx)
	if n, err := p.Retry(ctx, "c", job.Completed, []string{"c-2"}); err != nil || n != 1 {
		t.Fatalf("push again: %d %v", n, err)
	}
	if err := p.Ack(ctx, "c-2", 1, `"late"`); !errors.Is(err, job.ErrNotReserved) {
		t.Fatalf("the first delivery's ack, retried after the push again: %v, want a state error, nothing completed", err)
	}
	j := mustPop(t, p, ctx, "c")
	if j == nil || j.PublicID() != "c-2" || j.Result != "" || !j.EndedAt.IsZero() || j.Attempt() != 2 {
		t.Fatalf("pushed again: %+v, want c-2 at its second attempt without its result", j)
	}
	if err := p.Ack(ctx, "c-2", 1, ""); !errors.As(err, new(*job.StaleError)) {
		t.Fatalf("the first delivery's ack: %v, want stale", err)
	}
	if n, err := p.Purge(ctx, "c", job.Completed); err != nil || n != 1 {
		t.Fatalf("purge completed: %d %v", n, err)
	}
	checkClean(t, p, ctx)
}

// A bucket timer removes completed jobs once their time is up.
func TestCompletedJobsGoWhenTheirTimeIsUp(t *testing.T) {
	p, ctx := newPool(t)
	id := mustPush(t, p, ctx, job.Spec{Topic: "short", Body: "x", TTR: time.Minute, ClientID: "brief",
		KeepCompleted: durationp(time.Second)})
	j := mustPop(t, p, ctx, "short")
	if err := p.Ack(ctx, "brief", j.Attempt(), ""); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, _, err := p.Tick(ctx, p.BucketOf("short"), "short"); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Peek(ctx, num(id)); errors.Is(err, job.ErrNotFound) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the completed job is still there 30 s after its second was up")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := p.Resolve(ctx, "brief"); !errors.Is(err, job.ErrNotFound) {
		t.Fatalf("its client id: %v, want it gone with the job", err)
	}
	checkClean(t, p, ctx)
}

// An ack and pop completes with the ack's result, in one script.
func TestAckAndPopCompletes(t *testing.T) {
	p, ctx := newPool(t)
	if err := p.SetTopicConfig(ctx, "ap", job.TopicConfig{"keep_completed": "60"}); err != nil {
		t.Fatal(err)
	}
	first := mustPush(t, p, ctx, job.Spec{Topic: "ap", Body: "1", TTR: time.Minute})
	mustPush(t, p, ctx, job.Spec{Topic: "ap", Body: "2", TTR: time.Minute})
	j := mustPop(t, p, ctx, "ap")
	got, err := p.AckAndPop(ctx, num(first), j.Attempt(), "[1,2]", []string{"ap"})
	if err != nil || got.Job == nil || got.Job.Body != "2" {
		t.Fatalf("ack and pop: %+v %v", got, err)
	}
	if done, err := p.Peek(ctx, num(first)); err != nil || done.State != job.Completed || done.Result != "[1,2]" {
		t.Fatalf("the acked job: %+v %v, want completed with [1,2]", done, err)
	}
	checkClean(t, p, ctx)
}

// A store below format 3 is written for brokers that know no completed
// state: there an ack deletes, whatever the topic says.
func TestNoCompletedJobsBeforeFormat3(t *testing.T) {
	p, ctx := newPoolWith(t, Options{ReadsFormat: 2})
	if p.Format() != 2 {
		t.Fatalf("the store's format %d, want 2", p.Format())
	}
	if err := p.SetTopicConfig(ctx, "old", job.TopicConfig{"keep_completed": "60"}); err != nil {
		t.Fatal(err)
	}
	id := mustPush(t, p, ctx, job.Spec{Topic: "old", Body: "x", TTR: time.Minute, KeepCompleted: durationp(time.Minute)})
	j := mustPop(t, p, ctx, "old")
	if err := p.Ack(ctx, num(id), j.Attempt(), `"r"`); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Peek(ctx, num(id)); !errors.Is(err, job.ErrNotFound) {
		t.Fatalf("after the ack in format 2: %v, want it deleted", err)
	}
	checkClean(t, p, ctx)
}
