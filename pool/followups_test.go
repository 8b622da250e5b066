package pool

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gmq/gmq/internal/redistest"
	"github.com/gmq/gmq/job"
)

// pushFollowUps runs bucket b's timer on its follow-ups until none is due.
func pushFollowUps(t *testing.T, p *Pool, ctx context.Context, b int) map[string]int {
	t.Helper()
	all := map[string]int{}
	for {
		ready, more, err := p.Tick(ctx, b, followupsDue)
		if err != nil {
			t.Fatalf("push follow-ups: %v", err)
		}
		for topic, n := range ready {
			all[topic] += n
		}
		if !more {
			return all
		}
	}
}

// reserved pushes a job to topic and pops it: its id and delivery.
func reserved(t *testing.T, p *Pool, ctx context.Context, topic string, own *time.Duration) (uint64, int) {
	t.Helper()
	id := mustPush(t, p, ctx, job.Spec{Topic: topic, Body: "first", TTR: time.Minute, KeepCompleted: own})
	j := mustPop(t, p, ctx, topic)
	if j == nil || j.ID != id {
		t.Fatalf("pop %s: %+v, want job %d", topic, j, id)
	}
	return id, j.Attempt()
}

// keptOnly acks job id's delivery with follow-ups specs as AckPushing's
// script does, and pushes none: a broker that crashed right after the ack.
// They are due after grace.
func keptOnly(t *testing.T, p *Pool, ctx context.Context, id uint64, attempt int, specs []job.Spec, grace time.Duration) AckedPushing {
	return keptOnlyWith(t, p, ctx, id, attempt, "", specs, grace)
}

// keptOnlyWith is keptOnly of an ack with result.
func keptOnlyWith(t *testing.T, p *Pool, ctx context.Context, id uint64, attempt int, result string, specs []job.Spec, grace time.Duration) AckedPushing {
	t.Helper()
	entries, ids, err := p.followUpEntries(ctx, specs)
	if err != nil {
		t.Fatal(err)
	}
	b := int(id % uint64(p.opts.Buckets))
	j, err := p.Peek(ctx, num(id))
	if err != nil {
		t.Fatal(err)
	}
	keys := p.keys.withTopics(b, j.Topic)
	args := followupsScript.args(p.caller(), "ack", "member", member(id), "topic", j.Topic, "attempt", strconv.Itoa(attempt),
		"result", result, "entries", entries, "grace", strconv.FormatInt(millis(grace), 10))
	if r, err := followupsScript.Exec(ctx, p.client, keys, args).ToArray(); err != nil || decodeStatusReply(r).Status != replyOK {
		t.Fatalf("ack: %v %v", r, err)
	}
	return AckedPushing{IDs: ids, Bucket: b}
}

// An ack's follow-ups are pushed by the broker that acked, at once, under
// the ids the ack answered, to topics of any bucket (its own included), a
// delayed one delayed; the bucket's timer then finds none to push. The
// store checks clean throughout.
func TestAckPushesItsFollowUps(t *testing.T) {
	p, ctx := newPool(t)
	var dues []string
	p.OnFollowUpDue(func(topic string, due, now time.Time) { dues = append(dues, topic) })
	id, attempt := reserved(t, p, ctx, "a", nil)
	specs := []job.Spec{
		{Topic: "b", Body: "to another topic", Priority: 7, TTR: time.Minute},
		{Topic: "a", Body: "to its own topic", Priority: job.DefaultPriority, TTR: time.Minute},
		{Topic: "c", Body: "later", Priority: job.DefaultPriority, Delay: time.Hour},
	}
	got, err := p.AckPushing(ctx, num(id), attempt, "", specs)
	if err != nil || len(got.IDs) != 3 || got.Again {
		t.Fatalf("ack pushing: %+v %v", got, err)
	}
	if _, err := p.Peek(ctx, num(id)); !errors.Is(err, job.ErrNotFound) {
		t.Fatalf("the acked job: %v, want it gone", err)
	}
	if got.Ready["a"] != 1 || got.Ready["b"] != 1 || got.Ready["c"] != 0 || len(dues) != 1 || dues[0] != "c" || got.PushErr != nil {
		t.Fatalf("the ack made ready %v and told of delayed %v (%v); want a and b ready, c delayed", got.Ready, dues, got.PushErr)
	}
	checkClean(t, p, ctx)
	for i, fid := range got.IDs {
		j, err := p.Peek(ctx, num(fid))
		if err != nil || j.Topic != specs[i].Topic || j.Body != specs[i].Body {
			t.Fatalf("follow-up %d: %+v %v, want %+v", i, j, err, specs[i])
		}
	}
	if j, _ := p.Peek(ctx, num(got.IDs[2])); j.State != job.Delayed {
		t.Fatalf("the delayed follow-up is %v", j.State)
	}
	if j := mustPop(t, p, ctx, "b"); j == nil || j.ID != got.IDs[0] || j.Priority != 7 {
		t.Fatalf("pop b: %+v", j)
	}
	checkClean(t, p, ctx)
	if again := pushFollowUps(t, p, ctx, got.Bucket); len(again) != 0 {
		t.Fatalf("a second round pushed %v", again)
	}
}

// The follow-ups of a broker that crashed right after its ack are pushed
// by the bucket's timer once their grace is over.
func TestFollowUpsOfACrashedAck(t *testing.T) {
	p, ctx := newPool(t)
	id, attempt := reserved(t, p, ctx, "a", nil)
	got := keptOnly(t, p, ctx, id, attempt, []job.Spec{
		{Topic: "b", Body: "to another topic", Priority: job.DefaultPriority, TTR: time.Minute},
		{Topic: "a", Body: "to its own topic", Priority: job.DefaultPriority, TTR: time.Minute},
	}, 0)
	for _, fid := range got.IDs {
		if _, err := p.Peek(ctx, num(fid)); !errors.Is(err, job.ErrNotFound) {
			t.Fatalf("follow-up %d before the timer ran: %v, want none yet", fid, err)
		}
	}
	checkClean(t, p, ctx)
	if ready := pushFollowUps(t, p, ctx, got.Bucket); ready["a"] != 1 || ready["b"] != 1 {
		t.Fatalf("the timer made ready %v, want a and b", ready)
	}
	for _, fid := range got.IDs {
		if _, err := p.Peek(ctx, num(fid)); err != nil {
			t.Fatalf("follow-up %d after the timer ran: %v", fid, err)
		}
	}
	checkClean(t, p, ctx)
}

// A crash between a follow-up's push and its removal from the bucket
// pushes it again: its marker (or its number) refuses the second push,
// whether the first is still there or was already done with. Each is made
// once.
func TestFollowUpPushedOnceAcrossACrash(t *testing.T) {
	p, ctx := newPool(t)
	id, attempt := reserved(t, p, ctx, "a", nil)
	got := keptOnly(t, p, ctx, id, attempt, []job.Spec{
		{Topic: "b", Body: "still there", Priority: job.DefaultPriority, TTR: time.Minute},
		{Topic: "c", Body: "done with", Priority: job.DefaultPriority, TTR: time.Minute},
	}, 0)
	// The crash: the timer pushed both, and died before it removed them
	// (its lease on them, 0 here, has run out by the next round).
	keys := p.keys.withTopics(got.Bucket)
	r, err := followupsScript.Exec(ctx, p.client, keys, followupsScript.args(p.caller(), "take", "n", "10", "lease", "0")).ToArray()
	if err != nil || len(r) != 4 {
		t.Fatalf("take: %v %v", r, err)
	}
	for i, fid := range got.IDs {
		spec := []job.Spec{{Topic: "b", Body: "still there"}, {Topic: "c", Body: "done with"}}[i]
		spec.Priority, spec.TTR, spec.Unique = job.DefaultPriority, time.Minute, followUpMarker(fid)
		if _, err := p.push(ctx, spec, fid/uint64(p.opts.Buckets), scheduleFire{}); err != nil {
			t.Fatalf("the first push of follow-up %d: %v", i, err)
		}
	}
	c := mustPop(t, p, ctx, "c") // and its consumer is done with it
	if err := p.Ack(ctx, num(c.ID), c.Attempt(), ""); err != nil {
		t.Fatal(err)
	}
	if ready := pushFollowUps(t, p, ctx, got.Bucket); len(ready) != 0 {
		t.Fatalf("the round after the crash pushed %v again", ready)
	}
	for _, topic := range []string{"b", "c"} {
		st, err := p.TopicStats(ctx, topic)
		if err != nil || st.Jobs != 1 {
			t.Fatalf("topic %s: %d jobs pushed in all (%v), want 1", topic, st.Jobs, err)
		}
	}
	checkClean(t, p, ctx)
}

// What keeps a follow-up from being pushed: an ack refused (a stale
// delivery, an unknown job) stores none; an ack retried after the job was
// completed says so and stores none again; a store below format 4 refuses
// an ack with follow-ups, and the job stays reserved.
func TestFollowUpsRefused(t *testing.T) {
	p, ctx := newPool(t)
	next := []job.Spec{{Topic: "b", Body: "x", Priority: job.DefaultPriority}}
	id, attempt := reserved(t, p, ctx, "a", nil)
	var stale *job.StaleError
	if _, err := p.AckPushing(ctx, num(id), attempt+1, "", next); !errors.As(err, &stale) {
		t.Fatalf("a stale ack: %v", err)
	}
	if _, err := p.AckPushing(ctx, "999999", 0, "", next); !errors.Is(err, job.ErrNotFound) {
		t.Fatalf("an unknown job's ack: %v", err)
	}
	for b := range p.opts.Buckets {
		if ready := pushFollowUps(t, p, ctx, b); len(ready) != 0 {
			t.Fatalf("refused acks pushed %v", ready)
		}
	}

	kept, attempt := reserved(t, p, ctx, "k", durationp(time.Minute))
	if got, err := p.AckPushing(ctx, num(kept), attempt, `"done"`, next); err != nil || len(got.IDs) != 1 {
		t.Fatalf("ack: %+v %v", got, err)
	}
	if got, err := p.AckPushing(ctx, num(kept), attempt, `"done"`, next); err != nil || !got.Again || len(got.IDs) != 0 {
		t.Fatalf("the ack retried: %+v %v, want again and nothing stored", got, err)
	}
	checkClean(t, p, ctx)

	old, ctx := newPoolWith(t, Options{ReadsFormat: 3})
	id, attempt = reserved(t, old, ctx, "a", nil)
	if _, err := old.AckPushing(ctx, num(id), attempt, "", next); !errors.Is(err, job.ErrBusy) {
		t.Fatalf("follow-ups on a format 3 store: %v, want job.ErrBusy", err)
	}
	if j, err := old.Peek(ctx, num(id)); err != nil || j.State != job.Reserved {
		t.Fatalf("the job after the refused ack: %+v %v, want it reserved", j, err)
	}
}

// Check finds a follow-up without its spec, a spec not listed, and
// follow-ups the timer was not told of.
func TestCheckFindsBrokenFollowUps(t *testing.T) {
	p, ctx := newPool(t)
	id, attempt := reserved(t, p, ctx, "a", nil)
	got := keptOnly(t, p, ctx, id, attempt, []job.Spec{{Topic: "b", Body: "x", Priority: job.DefaultPriority}}, time.Hour)
	checkClean(t, p, ctx)
	list, specs := p.keys.buckets[got.Bucket].followups, p.keys.buckets[got.Bucket].followupSpecs
	for _, tc := range []struct {
		name string
		cmd  []string
		says string
	}{
		{"the timer not told", []string{"ZREM", p.keys.buckets[got.Bucket].due, followupsDue}, "the timer told of them at -1"},
		{"a spec not listed", []string{"HSET", specs, "0000000000000099", "{}"}, "specs not listed"},
		{"a follow-up without its spec", []string{"ZADD", list, "1", "0000000000000098"}, "listed without their spec"},
	} {
		if err := p.client.Do(ctx, p.client.B().Arbitrary(tc.cmd...).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		problems, err := p.Check(ctx)
		if err != nil || !strings.Contains(strings.Join(problems, "\n"), tc.says) {
			t.Fatalf("%s: check says %q %v, want %q", tc.name, problems, err, tc.says)
		}
	}
}

// A job's own follow-ups: then is pushed when it completes, by any ack
// (the batched one of every front end), on_dead when it dies (a fail past
// max_attempts, or a TTR that ran out past it), each once; nested ones
// follow in their turn. A completed job pushed again pushes its then no
// more.
func TestThenAndOnDead(t *testing.T) {
	p, ctx := newPool(t)
	if err := p.SetTopicConfig(ctx, "once", job.TopicConfig{"max_attempts": "1"}); err != nil {
		t.Fatal(err)
	}
	spec := func(topic, body string) job.Spec {
		return job.Spec{Topic: topic, Body: body, Priority: job.DefaultPriority, TTR: time.Minute}
	}
	// popped pushes a job with its follow-ups to topic and pops it.
	popped := func(topic string, then, onDead []job.Spec) *job.Job {
		s := spec(topic, "first")
		s.Then, s.OnDead = then, onDead
		mustPush(t, p, ctx, s)
		return mustPop(t, p, ctx, topic)
	}
	// made runs every bucket's follow-ups and pops and acks topic's, until
	// none comes: their bodies.
	made := func(topic string) []string {
		var out []string
		for {
			for b := range p.opts.Buckets {
				pushFollowUps(t, p, ctx, b)
			}
			got, err := p.Pop(ctx, []string{topic})
			if err != nil {
				t.Fatal(err)
			}
			if got.Job == nil {
				return out
			}
			out = append(out, got.Job.Body)
			if err := p.Ack(ctx, num(got.Job.ID), got.Job.Attempt(), ""); err != nil {
				t.Fatal(err)
			}
		}
	}

	next := spec("chain", "second")
	next.Then = []job.Spec{spec("chain", "third")}
	j := popped("a", []job.Spec{next}, []job.Spec{spec("grave", "never")})
	if err := p.Ack(ctx, num(j.ID), j.Attempt(), ""); err != nil {
		t.Fatalf("the ack of a job with then: %v", err)
	}
	if got := made("chain"); strings.Join(got, " ") != "second third" {
		t.Fatalf("then's chain made %q, want second then third", got)
	}
	if got := made("grave"); len(got) != 0 {
		t.Fatalf("on_dead of a job that completed: %q", got)
	}

	j = popped("once", []job.Spec{spec("chain", "never")}, []job.Spec{spec("grave", "failed")})
	if got, err := p.Fail(ctx, num(j.ID), j.Attempt(), "boom"); err != nil || got.State != job.Dead {
		t.Fatalf("fail past max_attempts: %+v %v", got, err)
	}
	if got := made("grave"); strings.Join(got, " ") != "failed" {
		t.Fatalf("on_dead of a failed job made %q", got)
	}

	s := spec("once", "first")
	s.TTR, s.OnDead = time.Millisecond, []job.Spec{spec("grave", "timed out")}
	id := mustPush(t, p, ctx, s)
	mustPop(t, p, ctx, "once")
	for deadline, dead := time.Now().Add(time.Minute), false; !dead; { // its TTR of 1 ms run out: a minute only for a machine that stalls
		if time.Now().After(deadline) {
			t.Fatal("the job whose TTR ran out past max_attempts never died")
		}
		if _, _, err := p.Tick(ctx, p.BucketOf("once"), "once"); err != nil {
			t.Fatal(err)
		}
		got, err := p.Peek(ctx, num(id))
		dead = err == nil && got.State == job.Dead
	}
	if got := made("grave"); strings.Join(got, " ") != "timed out" {
		t.Fatalf("on_dead of a job whose TTR ran out made %q", got)
	}
	if got := made("chain"); len(got) != 0 {
		t.Fatalf("then of jobs that died: %q", got)
	}

	if err := p.SetTopicConfig(ctx, "kept", job.TopicConfig{"keep_completed": "600"}); err != nil {
		t.Fatal(err)
	}
	j = popped("kept", []job.Spec{spec("chain", "once only")}, nil)
	if err := p.Ack(ctx, num(j.ID), j.Attempt(), ""); err != nil {
		t.Fatal(err)
	}
	if n, err := p.Retry(ctx, "kept", job.Completed, []string{num(j.ID)}); err != nil || n != 1 {
		t.Fatalf("push the completed job again: %d %v", n, err)
	}
	again := mustPop(t, p, ctx, "kept")
	if err := p.Ack(ctx, num(again.ID), again.Attempt(), ""); err != nil {
		t.Fatal(err)
	}
	if got := made("chain"); strings.Join(got, " ") != "once only" {
		t.Fatalf("then of a job completed, pushed again and completed again made %q, want it once", got)
	}
	checkClean(t, p, ctx)
}

// What a follow-up costs against doing its work by hand: each op pushes a
// job, pops it, and either acks it and pushes the next job (two calls), or
// acks it with the next job as a follow-up (the ack, which keeps it; its
// push, with its marker; its removal: three), or is pushed with the next
// job as its then and acked plainly (the batched ack refused THEN, then
// those three; the push numbers the then). docs/PERFORMANCE.md,
// "Follow-ups".
func BenchmarkFollowUp(b *testing.B) {
	t := &testing.T{}
	for _, tc := range []struct {
		name string
		then bool // the job is pushed with next as its then, and acked plainly
		ack  func(p *Pool, ctx context.Context, j *job.Job, next job.Spec) error
	}{
		{"ack then push", false, func(p *Pool, ctx context.Context, j *job.Job, next job.Spec) error {
			if err := p.Ack(ctx, num(j.ID), j.Attempt(), ""); err != nil {
				return err
			}
			_, err := p.Push(ctx, next)
			return err
		}},
		{"ack with a follow-up", false, func(p *Pool, ctx context.Context, j *job.Job, next job.Spec) error {
			got, err := p.AckPushing(ctx, num(j.ID), j.Attempt(), "", []job.Spec{next})
			if err == nil {
				err = got.PushErr
			}
			return err
		}},
		{"a job's then", true, func(p *Pool, ctx context.Context, j *job.Job, _ job.Spec) error {
			return p.Ack(ctx, num(j.ID), j.Attempt(), "")
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			p, ctx := newPoolWith(t, Options{Buckets: 16})
			first := job.Spec{Topic: "bench", Body: strings.Repeat("b", 100), Priority: job.DefaultPriority, TTR: time.Minute}
			next := job.Spec{Topic: "bench-next", Body: strings.Repeat("n", 100), Priority: job.DefaultPriority, TTR: time.Minute}
			if tc.then {
				first.Then = []job.Spec{next}
			}
			for b.Loop() {
				if _, err := p.Push(ctx, first); err != nil {
					b.Fatal(err)
				}
				got, err := p.Pop(ctx, []string{"bench"})
				if err != nil || got.Job == nil {
					b.Fatalf("pop: %+v %v", got, err)
				}
				if err := tc.ack(p, ctx, got.Job, next); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A follow-up of a completion WithResult takes the finished job's result:
// its body is {"body": its own, "result": the ack's result, or null}, a
// JSON body; whether the ack's own follow-up or the job's then, pushed by
// the acking broker or by the timer after a crash.
func TestFollowUpWithResult(t *testing.T) {
	p, ctx := newPool(t)
	next := func(body string, asJSON bool) job.Spec {
		return job.Spec{Topic: "r-next", Body: body, BodyJSON: asJSON, Priority: job.DefaultPriority, TTR: time.Minute, WithResult: true}
	}
	bodyOf := func(id uint64) string {
		t.Helper()
		j, err := p.Peek(ctx, num(id))
		if err != nil || !j.BodyJSON {
			t.Fatalf("follow-up %d: %+v %v, want a JSON body", id, j, err)
		}
		return j.Body
	}
	id, attempt := reserved(t, p, ctx, "r", nil)
	got, err := p.AckPushing(ctx, num(id), attempt, `{"rows":7}`, []job.Spec{next("plain", false), next(`{"a":[1,2]}`, true)})
	if err != nil || got.PushErr != nil {
		t.Fatalf("ack: %+v %v", got, err)
	}
	if b := bodyOf(got.IDs[0]); b != `{"body":"plain","result":{"rows":7}}` {
		t.Fatalf("a string body with the result: %s", b)
	}
	if b := bodyOf(got.IDs[1]); b != `{"body":{"a":[1,2]},"result":{"rows":7}}` {
		t.Fatalf("a JSON body with the result: %s", b)
	}

	s := job.Spec{Topic: "r", Body: "first", Priority: job.DefaultPriority, TTR: time.Minute, Then: []job.Spec{next("then", false)}}
	mustPush(t, p, ctx, s)
	j := mustPop(t, p, ctx, "r")
	if err := p.Ack(ctx, num(j.ID), j.Attempt(), ""); err != nil {
		t.Fatal(err)
	}
	popped := mustPop(t, p, ctx, "r-next")
	for popped != nil && popped.Body != `{"body":"then","result":null}` {
		popped = mustPop(t, p, ctx, "r-next")
	}
	if popped == nil {
		t.Fatal("the then with_result of an ack without a result: not found, want its result null")
	}

	id, attempt = reserved(t, p, ctx, "r", nil)
	crashed := keptOnlyWith(t, p, ctx, id, attempt, `"ok"`, []job.Spec{next("after a crash", false)}, 0)
	pushFollowUps(t, p, ctx, crashed.Bucket)
	if b := bodyOf(crashed.IDs[0]); b != `{"body":"after a crash","result":"ok"}` {
		t.Fatalf("pushed by the timer: %s", b)
	}
	checkClean(t, p, ctx)
}

// A follow-up its topic refuses is put off, a second, then twice as long
// at each next refusal, and pushed once its topic takes it: never dropped,
// and one that is never taken costs a try an hour at most.
func TestRefusedFollowUpBacksOff(t *testing.T) {
	p, ctx := newPool(t)
	if err := p.SetTopicConfig(ctx, "small", job.TopicConfig{"max_item_size": "2"}); err != nil {
		t.Fatal(err)
	}
	id, attempt := reserved(t, p, ctx, "a", nil)
	before := time.Now()
	got, err := p.AckPushing(ctx, num(id), attempt, "", []job.Spec{{Topic: "small", Body: "too long", Priority: job.DefaultPriority, TTR: time.Minute}})
	if err != nil || !errors.Is(got.PushErr, job.ErrTooBig) {
		t.Fatalf("ack: %+v %v, want the follow-up refused too big", got, err)
	}
	list, specs := p.keys.buckets[got.Bucket].followups, p.keys.buckets[got.Bucket].followupSpecs
	fid := member(got.IDs[0])
	// putOff checks the follow-up is due again want after its refusal,
	// which came between before and now (Redis's clock is this machine's:
	// a slow machine widens the window, never fails it).
	putOff := func(refusal int, before time.Time, want time.Duration) {
		t.Helper()
		after := time.Now()
		score, err := p.client.Do(ctx, p.client.B().Zscore().Key(list).Member(fid).Build()).AsFloat64()
		if err != nil {
			t.Fatal(err)
		}
		at, slack := time.UnixMilli(int64(score)), 10*time.Millisecond
		if at.Before(before.Add(want-slack)) || at.After(after.Add(want+slack)) {
			t.Fatalf("after refusal %d it is due at %v, want %v after a refusal between %v and %v", refusal, at, want, before, after)
		}
	}
	spec, err := p.client.Do(ctx, p.client.B().Hget().Key(specs).Field(fid).Build()).ToString()
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} { // tries 1 to 3
		if i > 0 { // its timer's next tries
			before = time.Now()
			if _, _, err := p.pushFollowUps(ctx, got.Bucket, [][2]string{{fid, spec}}); !errors.Is(err, job.ErrTooBig) {
				t.Fatalf("try %d: %v", i+1, err)
			}
		}
		putOff(i+1, before, want)
	}
	if st, err := p.Stats(ctx); err != nil || st.FollowUps != 1 {
		t.Fatalf("stats while it is put off: %d follow-ups pending (%v), want 1", st.FollowUps, err)
	}
	// Due again and refused again: not the timer's error, so its round goes
	// on to the bucket's other work.
	if err := p.client.Do(ctx, p.client.B().Zadd().Key(list).ScoreMember().ScoreMember(0, fid).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	before = time.Now()
	if _, _, err := p.Tick(ctx, got.Bucket, followupsDue); err != nil {
		t.Fatalf("a round of the timer over a follow-up its topic refuses: %v, want none (it is put off)", err)
	}
	putOff(4, before, 8*time.Second) // the timer's round above
	checkClean(t, p, ctx)
	if err := p.SetTopicConfig(ctx, "small", job.TopicConfig{"max_item_size": "100"}); err != nil {
		t.Fatal(err)
	}
	if _, left, err := p.pushFollowUps(ctx, got.Bucket, [][2]string{{fid, spec}}); err != nil || left != 0 {
		t.Fatalf("once its topic takes it: %d left, %v", left, err)
	}
	if j := mustPop(t, p, ctx, "small"); j == nil || j.ID != got.IDs[0] {
		t.Fatalf("the follow-up: %+v", j)
	}
	if n, _ := p.client.Do(ctx, p.client.B().Hlen().Key(specs).Build()).AsInt64(); n != 0 {
		t.Fatalf("%d fields left in the specs (its count of tries?)", n)
	}
	if st, err := p.Stats(ctx); err != nil || st.FollowUps != 0 {
		t.Fatalf("stats once it is pushed: %d follow-ups pending (%v)", st.FollowUps, err)
	}
	checkClean(t, p, ctx)
}

// On a Redis Cluster (3 masters) an ack's follow-ups, and a job's then and
// on_dead, reach topics on the other masters: each pushed once, by the
// acking pool or by the timer after a crash, and the store checks clean.
func TestFollowUpsOnRedisCluster(t *testing.T) {
	p, ctx := newClusterPool(t)
	if err := p.SetTopicConfig(ctx, "c-once", job.TopicConfig{"max_attempts": "1"}); err != nil {
		t.Fatal(err)
	}
	var topics []string // one topic a bucket: every master's slots
	seen := map[int]bool{}
	for i := 0; len(topics) < 16; i++ {
		name := "c-" + strconv.Itoa(i)
		if b := p.BucketOf(name); !seen[b] {
			seen[b] = true
			topics = append(topics, name)
		}
	}
	var specs []job.Spec
	for _, topic := range topics {
		specs = append(specs, job.Spec{Topic: topic, Body: "after " + topic, Priority: job.DefaultPriority, TTR: time.Minute})
	}
	id, attempt := reserved(t, p, ctx, "c-first", nil)
	got, err := p.AckPushing(ctx, num(id), attempt, "", specs)
	if err != nil || got.PushErr != nil || len(got.IDs) != len(topics) {
		t.Fatalf("ack: %+v %v", got, err)
	}
	id, attempt = reserved(t, p, ctx, "c-second", nil)
	crashed := keptOnly(t, p, ctx, id, attempt, specs, 0)
	pushFollowUps(t, p, ctx, crashed.Bucket)
	s := job.Spec{Topic: "c-once", Body: "x", Priority: job.DefaultPriority, TTR: time.Minute, OnDead: specs[:3]}
	mustPush(t, p, ctx, s)
	j := mustPop(t, p, ctx, "c-once")
	if _, err := p.Fail(ctx, num(j.ID), j.Attempt(), "boom"); err != nil {
		t.Fatal(err)
	}
	for b := range p.opts.Buckets {
		pushFollowUps(t, p, ctx, b)
	}
	for i, topic := range topics {
		want := 2
		if i < 3 {
			want = 3
		}
		st, err := p.TopicStats(ctx, topic)
		if err != nil || st.Jobs != int64(want) || st.Ready != int64(want) {
			t.Fatalf("topic %s on its master: %d pushed, %d ready (%v), want %d", topic, st.Jobs, st.Ready, err, want)
		}
	}
	checkClean(t, p, ctx)
}

// Under wait_replicas an ack with follow-ups waits for the replicas as a
// push does: unconfirmed, it answers why (the job is acked on the master,
// and its follow-ups are left for the bucket's timer, not pushed from an
// ack a failover could take back).
func TestFollowUpsWaitForReplicas(t *testing.T) {
	p, ctx := newPoolWith(t, Options{WaitReplicas: 1, WaitTimeout: 50 * time.Millisecond})
	p.opts.WaitReplicas = 0 // the job itself, pushed and popped without replicas
	id, attempt := reserved(t, p, ctx, "a", nil)
	p.opts.WaitReplicas = 1
	_, err := p.AckPushing(ctx, num(id), attempt, "", []job.Spec{{Topic: "b", Body: "x", Priority: job.DefaultPriority, TTR: time.Minute}})
	if !errors.Is(err, job.ErrUnavailable) || !strings.Contains(err.Error(), "0 of the 1 replicas") {
		t.Fatalf("an ack with follow-ups on a master without replicas: %v", err)
	}
	if st, err := p.Stats(ctx); err != nil || st.FollowUps != 1 {
		t.Fatalf("its follow-up: %d kept (%v), want 1 for the timer", st.FollowUps, err)
	}

	master := redistest.Start(t) // with a replica: confirmed, and pushed at once
	redistest.StartReplica(t, master)
	p, ctx = newReplicatedPool(t, master, 1)
	id, attempt = reserved(t, p, ctx, "a", nil)
	got, err := p.AckPushing(ctx, num(id), attempt, "", []job.Spec{{Topic: "b", Body: "x", Priority: job.DefaultPriority, TTR: time.Minute}})
	if err != nil || got.PushErr != nil || got.Ready["b"] != 1 {
		t.Fatalf("an ack with follow-ups, its replica there: %+v %v", got, err)
	}
}

// A timer's take leases what it takes: another timer's take, at once,
// finds none of them (it takes others), and the bucket's due time moves
// past the lease, so no timer spins on them meanwhile.
func TestFollowUpsTakenOnce(t *testing.T) {
	p, ctx := newPool(t)
	id, attempt := reserved(t, p, ctx, "a", nil)
	got := keptOnly(t, p, ctx, id, attempt, []job.Spec{{Topic: "b", Body: "once", Priority: job.DefaultPriority, TTR: time.Minute}}, 0)
	keys := p.keys.withTopics(got.Bucket)
	take := func() int {
		r, err := followupsScript.Exec(ctx, p.client, keys, followupsScript.args(p.caller(), "take", "n", "10", "lease", "60000")).ToArray()
		if err != nil {
			t.Fatal(err)
		}
		return len(r) / 2
	}
	if n := take(); n != 1 {
		t.Fatalf("the first take: %d follow-ups, want 1", n)
	}
	if n := take(); n != 0 {
		t.Fatalf("a second take within the lease: %d follow-ups, want none", n)
	}
	if topics, _, err := p.DueTopics(ctx, got.Bucket, 10); err != nil || slices.Contains(topics, followupsDue) {
		t.Fatalf("due within the lease: %v %v", topics, err)
	}
}
