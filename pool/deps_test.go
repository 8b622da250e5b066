package pool

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/gmq/gmq/job"
)

// tellAll runs every bucket's timer on its follow-ups (notices among
// them) until none is due now.
func tellAll(t *testing.T, p *Pool, ctx context.Context) {
	t.Helper()
	for b := range p.opts.Buckets {
		pushFollowUps(t, p, ctx, b)
	}
}

// popAck pops topic's next job (it must be want) and acks it with result.
func popAck(t *testing.T, p *Pool, ctx context.Context, topic string, want uint64, result string) {
	t.Helper()
	j := mustPop(t, p, ctx, topic)
	if j == nil || j.ID != want {
		t.Fatalf("pop %s: %+v, want job %d", topic, j, want)
	}
	if err := p.Ack(ctx, strconv.FormatUint(j.ID, 10), j.Attempt(), result); err != nil {
		t.Fatalf("ack %d: %v", want, err)
	}
}

func stateOf(t *testing.T, p *Pool, ctx context.Context, id uint64) job.State {
	t.Helper()
	j, err := p.Peek(ctx, num(id))
	if errors.Is(err, job.ErrNotFound) {
		return job.Gone
	}
	if err != nil {
		t.Fatal(err)
	}
	return j.State
}

// A job pushed after two others, in other buckets, waits until both have
// completed, however they end (kept or not), then becomes ready with their
// results; a notice told twice changes nothing.
func TestDependentWaitsForItsDependencies(t *testing.T) {
	p, ctx := newPool(t)
	keep := time.Hour
	a := mustPush(t, p, ctx, job.Spec{Topic: "dep-a", Body: "a", TTR: time.Minute, KeepCompleted: &keep})
	b := mustPush(t, p, ctx, job.Spec{Topic: "dep-b", Body: "b", TTR: time.Minute})
	d := mustPush(t, p, ctx, job.Spec{Topic: "dep-d", Body: "d", TTR: time.Minute, After: []string{num(a), num(b)}, WithResults: true})
	if s := stateOf(t, p, ctx, d); s != job.Waiting {
		t.Fatalf("the dependent is %v, want waiting", s)
	}
	if j := mustPop(t, p, ctx, "dep-d"); j != nil {
		t.Fatalf("popped %d while it waits", j.ID)
	}
	checkClean(t, p, ctx)
	popAck(t, p, ctx, "dep-a", a, `{"rows":3}`)
	tellAll(t, p, ctx)
	if s := stateOf(t, p, ctx, d); s != job.Waiting {
		t.Fatalf("with one dependency done the dependent is %v, want waiting", s)
	}
	popAck(t, p, ctx, "dep-b", b, `"ok"`)
	tellAll(t, p, ctx)
	j, err := p.Peek(ctx, num(d))
	if err != nil || j.State != job.Ready {
		t.Fatalf("with both done: %+v %v, want it ready", j, err)
	}
	deps := j.Dependencies
	if deps == nil || len(deps.After) != 2 || len(deps.Pending) != 0 || string(deps.Results[a]) != `{"rows":3}` || string(deps.Results[b]) != `"ok"` {
		t.Fatalf("its dependencies: %+v", deps)
	}
	// The same notice again (a crash between telling it and removing it).
	if _, _, done, err := p.tellDependent(ctx, depNoticePrefix+member(d)+" "+member(a), `{"dependent":"`+member(d)+`","topic":"dep-d","how":"dead","at":1}`); err != nil || !done {
		t.Fatalf("a notice told again: %v %v", done, err)
	}
	if got := mustPop(t, p, ctx, "dep-d"); got == nil || got.ID != d {
		t.Fatalf("pop the dependent: %+v", got)
	}
	checkClean(t, p, ctx)
}

// A dependency that ends otherwise than completed cancels its dependent
// (and that one's own dependents in turn), or, with on_dependency_failure
// run, counts as done; whichever way it ends.
func TestDependencyFailure(t *testing.T) {
	ends := []struct {
		name string
		end  func(t *testing.T, p *Pool, ctx context.Context, id uint64)
	}{
		{"dead", func(t *testing.T, p *Pool, ctx context.Context, id uint64) {
			j := mustPop(t, p, ctx, "fail-a")
			if _, err := p.Fail(ctx, num(id), j.Attempt(), "boom"); err != nil {
				t.Fatal(err)
			}
		}},
		{"cancelled", func(t *testing.T, p *Pool, ctx context.Context, id uint64) {
			if _, err := p.Cancel(ctx, num(id)); err != nil {
				t.Fatal(err)
			}
		}},
		{"deleted", func(t *testing.T, p *Pool, ctx context.Context, id uint64) {
			if err := p.Delete(ctx, num(id), 0); err != nil {
				t.Fatal(err)
			}
		}},
		{"purged", func(t *testing.T, p *Pool, ctx context.Context, id uint64) {
			if _, err := p.Purge(ctx, "fail-a", job.Ready); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, end := range ends {
		for _, policy := range []string{"", job.DependencyRun} {
			t.Run(end.name+"/"+policy, func(t *testing.T) {
				p, ctx := newPool(t)
				a := mustPush(t, p, ctx, job.Spec{Topic: "fail-a", Body: "a", TTR: time.Minute, Retry: once()})
				d := mustPush(t, p, ctx, job.Spec{Topic: "fail-d", Body: "d", TTR: time.Minute, After: []string{num(a)}, OnDependencyFailure: policy})
				e := mustPush(t, p, ctx, job.Spec{Topic: "fail-e", Body: "e", TTR: time.Minute, After: []string{num(d)}})
				end.end(t, p, ctx, a)
				tellAll(t, p, ctx)
				tellAll(t, p, ctx) // d's own end tells e
				if policy == job.DependencyRun {
					if s := stateOf(t, p, ctx, d); s != job.Ready {
						t.Fatalf("d is %v, want ready (run)", s)
					}
					if s := stateOf(t, p, ctx, e); s != job.Waiting {
						t.Fatalf("e is %v, want waiting for d", s)
					}
				} else {
					if s := stateOf(t, p, ctx, d); s != job.Gone && s != job.Cancelled {
						t.Fatalf("d is %v, want cancelled", s)
					}
					if s := stateOf(t, p, ctx, e); s != job.Gone && s != job.Cancelled {
						t.Fatalf("e is %v, want cancelled after d", s)
					}
				}
				checkClean(t, p, ctx)
			})
		}
	}
}

// A push names only jobs there: an unknown one is refused, as is one
// already dead (unless the dependent runs anyway); one already completed
// and kept counts as done.
func TestAfterRefusals(t *testing.T) {
	p, ctx := newPool(t)
	if _, err := p.Push(ctx, job.Spec{Topic: "r", Body: "x", After: []string{"123456789"}}); !errors.Is(err, job.ErrInvalid) {
		t.Fatalf("after an unknown job: %v, want invalid", err)
	}
	if _, err := p.Push(ctx, job.Spec{Topic: "r", Body: "x", After: []string{"no-such-client-id"}}); !errors.Is(err, job.ErrInvalid) {
		t.Fatalf("after an unknown client id: %v, want invalid", err)
	}
	dead := mustPush(t, p, ctx, job.Spec{Topic: "r-a", Body: "a", TTR: time.Minute, Retry: once()})
	j := mustPop(t, p, ctx, "r-a")
	if _, err := p.Fail(ctx, num(dead), j.Attempt(), "boom"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Push(ctx, job.Spec{Topic: "r", Body: "x", After: []string{num(dead)}}); !errors.Is(err, job.ErrConflict) {
		t.Fatalf("after a dead job: %v, want a conflict", err)
	}
	if id := mustPush(t, p, ctx, job.Spec{Topic: "r", Body: "x", After: []string{num(dead)}, OnDependencyFailure: job.DependencyRun}); stateOf(t, p, ctx, id) != job.Ready {
		t.Fatal("after a dead job, run anyway: not ready")
	}
	keep := time.Hour
	done := mustPush(t, p, ctx, job.Spec{Topic: "r-b", Body: "b", TTR: time.Minute, KeepCompleted: &keep})
	popAck(t, p, ctx, "r-b", done, "")
	if id := mustPush(t, p, ctx, job.Spec{Topic: "r", Body: "x", After: []string{num(done)}, Delay: time.Hour}); stateOf(t, p, ctx, id) != job.Delayed {
		t.Fatal("after a completed job, with a delay: not delayed")
	}
	// Its topic would replace the waiting job that holds its body's key:
	// refused instead (that job waits for nothing; this one would not wait).
	if err := p.SetTopicConfig(ctx, "r-u", job.TopicConfig{"unique_from": "body", "unique_mode": "replace"}); err != nil {
		t.Fatal(err)
	}
	outside := mustPush(t, p, ctx, job.Spec{Topic: "r-u", Body: "same", TTR: time.Minute})
	var held *job.UniqueError
	if _, err := p.Push(ctx, job.Spec{Topic: "r-u", Body: "same", After: []string{num(done)}}); !errors.As(err, &held) || held.ID != outside {
		t.Fatalf("after, to a topic that would replace another job: %v, want its key held", err)
	}
	checkClean(t, p, ctx)
}

// once is a retry policy of one attempt: the first failure kills.
func once() *job.RetryPolicy {
	one := 1
	return &job.RetryPolicy{MaxAttempts: &one}
}

// Waiting jobs are listed, purged and flushed as other states are; a
// purge of them counts as their end for those that wait for them in turn.
func TestWaitingJobsListedAndPurged(t *testing.T) {
	p, ctx := newPool(t)
	a := mustPush(t, p, ctx, job.Spec{Topic: "lp-a", Body: "a", TTR: time.Minute})
	d := mustPush(t, p, ctx, job.Spec{Topic: "lp-d", Body: "d", TTR: time.Minute, After: []string{num(a)}})
	e := mustPush(t, p, ctx, job.Spec{Topic: "lp-e", Body: "e", TTR: time.Minute, After: []string{num(d)}})
	page, total, err := p.ListJobs(ctx, "lp-d", job.Waiting, 0, 10)
	if err != nil || total != 1 || len(page) != 1 || page[0].ID != d {
		t.Fatalf("the waiting jobs of lp-d: %+v %d %v", page, total, err)
	}
	if n, err := p.Purge(ctx, "lp-d", job.Waiting); err != nil || n != 1 {
		t.Fatalf("purge the waiting: %d %v", n, err)
	}
	tellAll(t, p, ctx)
	if s := stateOf(t, p, ctx, e); s != job.Gone {
		t.Fatalf("e, after the job it waited for was purged: %v, want cancelled and gone", s)
	}
	checkClean(t, p, ctx)
}

// A chain: a job that waited, once run and completed, tells the jobs that
// wait for it in turn.
func TestDependencyChain(t *testing.T) {
	p, ctx := newPool(t)
	keep := time.Hour
	a := mustPush(t, p, ctx, job.Spec{Topic: "ch-a", Body: "a", TTR: time.Minute, KeepCompleted: &keep})
	d := mustPush(t, p, ctx, job.Spec{Topic: "ch-d", Body: "d", TTR: time.Minute, KeepCompleted: &keep, After: []string{num(a)}})
	e := mustPush(t, p, ctx, job.Spec{Topic: "ch-e", Body: "e", TTR: time.Minute, After: []string{num(d), num(a)}})
	popAck(t, p, ctx, "ch-a", a, "")
	tellAll(t, p, ctx)
	popAck(t, p, ctx, "ch-d", d, "")
	tellAll(t, p, ctx)
	if s := stateOf(t, p, ctx, e); s != job.Ready {
		j, _ := p.Peek(ctx, num(e))
		t.Fatalf("e is %v (%+v), want ready once d completed", s, j.Dependencies)
	}
	checkClean(t, p, ctx)
}

// A dependency that ends between its dependent's register and its store
// leaves a notice that finds no job: put off, not lost, it is told once
// the job is stored.
func TestNoticeBeforeItsJobIsStored(t *testing.T) {
	p, ctx := newPool(t)
	a := mustPush(t, p, ctx, job.Spec{Topic: "nb-a", Body: "a", TTR: time.Minute})
	spec := job.Spec{Topic: "nb-d", Body: "d", Priority: job.DefaultPriority, TTR: time.Minute, After: []string{num(a)}}
	seqs, err := p.ids.next(ctx, p.client, 1)
	if err != nil {
		t.Fatal(err)
	}
	b := p.keys.bucketOf(spec.Topic)
	m := member(seqs[0]*uint64(p.opts.Buckets) + uint64(b))
	after, err := p.dependOn(ctx, spec, m) // the push's first step
	if err != nil {
		t.Fatal(err)
	}
	popAck(t, p, ctx, "nb-a", a, "")
	tellAll(t, p, ctx)
	ab := int(a % uint64(p.opts.Buckets))
	notice := depNoticePrefix + m + " " + member(a)
	if _, err := p.client.Do(ctx, p.client.B().Zscore().Key(p.keys.buckets[ab].followups).Member(notice).Build()).AsFloat64(); err != nil {
		t.Fatalf("the notice for a job not yet stored: %v, want it put off", err)
	}
	if reply, _, err := p.pushOp(ctx, b, spec, m, scheduleFire{}, after); err != nil || reply.Status != replyOK { // its second step
		t.Fatalf("store: %v %v", reply, err)
	}
	if err := p.client.Do(ctx, p.client.B().Zadd().Key(p.keys.buckets[ab].followups).ScoreMember().ScoreMember(0, notice).Build()).Error(); err != nil {
		t.Fatal(err) // due now rather than after its backoff
	}
	tellAll(t, p, ctx)
	n, _ := parseMember(m)
	if s := stateOf(t, p, ctx, n); s != job.Ready {
		t.Fatalf("the job once stored and told: %v, want ready", s)
	}
	checkClean(t, p, ctx)
}
