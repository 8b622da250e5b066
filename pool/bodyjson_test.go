package pool

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/gmq/gmq/job"
	"github.com/gmq/gmq/lua"
)

// A body pushed as JSON is marked so in its record (F_JSON), and every path
// that makes a job of it or moves it keeps the mark with the body.

// readRecord reads job member's record (in topic's bucket) through the
// contract's names: how many fields it has, its F_JSON and the field after
// the last this version knows ("nil" where there is none). With change
// "strip" it first takes F_JSON off the end, as a broker from before the
// field wrote it; with "extend", it first adds a field after it, holding
// "future", as a newer broker might.
func readRecord(t *testing.T, p *Pool, ctx context.Context, topic string, id uint64, change string) (n int, asJSON, next string) {
	t.Helper()
	script := contractScript(`local job = cmsgpack.unpack(redis.call('HGET', K_JOBS, ARGV[1]))
if ARGV[2] == 'strip' then job[F_JSON] = nil end
local later = tonumber(ARGV[3]) -- one past the last field this version knows
if ARGV[2] == 'extend' then job[later] = 'future' end
if ARGV[2] ~= '' then redis.call('HSET', K_JOBS, ARGV[1], cmsgpack.pack(job)) end
local n = 0 -- the last field's number: # is not, with a hole
for k in pairs(job) do n = math.max(n, k) end
return {tostring(n), tostring(job[F_JSON]), tostring(job[later])}`)
	got, err := script.Exec(ctx, p.client, p.keys.withTopics(p.keys.bucketOf(topic), topic), []string{member(id), change, strconv.Itoa(lua.FieldCount)}).AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	n, err = strconv.Atoi(got[0])
	if err != nil {
		t.Fatal(err)
	}
	return n, got[1], got[2]
}

// fields is how many fields this version's new record has (F_BODY, the
// last, only in store format 2 with a short body; the outcome fields after
// it come only with their use); format 1's have one less.
var fields = int(lua.FieldBody)

func TestBodyJSONPushPopUpdate(t *testing.T) {
	p, ctx := newPool(t)
	obj := mustPush(t, p, ctx, job.Spec{Topic: "j", Body: `{"to":"a"}`, BodyJSON: true, TTR: time.Minute})
	str := mustPush(t, p, ctx, job.Spec{Topic: "j", Body: `{"to":"b"}`, TTR: time.Minute})
	arr := mustPush(t, p, ctx, job.Spec{Topic: "j", Body: `[]`, BodyJSON: true, TTR: time.Minute})
	for _, want := range []struct {
		id     uint64
		body   string
		asJSON bool
	}{{obj, `{"to":"a"}`, true}, {str, `{"to":"b"}`, false}} {
		j, err := p.Peek(ctx, num(want.id))
		if err != nil || j.Body != want.body || j.BodyJSON != want.asJSON {
			t.Fatalf("peek %d: %+v %v, want body %s, JSON %v", want.id, j, err, want.body, want.asJSON)
		}
	}
	if j := mustPop(t, p, ctx, "j"); j == nil || j.ID != obj || !j.BodyJSON {
		t.Fatalf("popped %+v, want job %d as JSON", j, obj)
	}
	got, err := p.PopN(ctx, []string{"j"}, 5)
	if err != nil || got.Job == nil || got.Job.ID != str || got.Job.BodyJSON || len(got.Rest) != 1 || got.Rest[0].ID != arr || !got.Rest[0].BodyJSON {
		t.Fatalf("a batch pop: %+v %v, want the string job, then the array", got, err)
	}

	// A change of the body sets the mark as the new body was given.
	id := mustPush(t, p, ctx, job.Spec{Topic: "u", Body: "text", Delay: time.Hour})
	for _, u := range []struct {
		body   string
		asJSON bool
	}{{`[1,2]`, true}, {`[1,2]`, false}, {`{"x":1}`, true}} {
		j, err := p.UpdateJob(ctx, num(id), job.Update{Body: &u.body, BodyJSON: u.asJSON})
		if err != nil || j.Body != u.body || j.BodyJSON != u.asJSON {
			t.Fatalf("update to %s (JSON %v): %+v %v", u.body, u.asJSON, j, err)
		}
	}
	pri := uint32(3)
	if j, err := p.UpdateJob(ctx, num(id), job.Update{Priority: &pri}); err != nil || !j.BodyJSON {
		t.Fatalf("a change of the priority alone lost the mark: %+v %v", j, err)
	}
	checkStore(t, p, ctx)
}

// A job moved to its topic's expire_to, a fanout child's copy, a dead job
// retried, a unique push's replacement and a schedule's fire keep the mark
// with the body.
func TestBodyJSONFollowsTheBody(t *testing.T) {
	p, ctx := newPool(t)
	want := func(what string, j *job.Job, body string, asJSON bool) {
		t.Helper()
		if j == nil || j.Body != body || j.BodyJSON != asJSON {
			t.Fatalf("%s: %+v, want body %s, JSON %v", what, j, body, asJSON)
		}
	}

	// expire_to: through the outbox.
	if err := p.ApplyTopicConfig(ctx, nil, map[string]job.TopicConfig{"src": {"expire_to": "dst"}}); err != nil {
		t.Fatal(err)
	}
	mustPush(t, p, ctx, job.Spec{Topic: "src", Body: `{"moved":true}`, BodyJSON: true, Expires: time.Now().Add(20 * time.Millisecond)})
	mustPush(t, p, ctx, job.Spec{Topic: "src", Body: `["a string"]`, Expires: time.Now().Add(20 * time.Millisecond)})
	time.Sleep(40 * time.Millisecond)
	if n, err := p.FlushExpired(ctx, "src"); err != nil || n != 2 {
		t.Fatalf("flush expired: %d %v", n, err)
	}
	if ready, _, err := p.Tick(ctx, p.BucketOf("src"), outboxDue); err != nil || ready["dst"] != 2 {
		t.Fatalf("moving the outbox: %v %v", ready, err)
	}
	want("moved by expire_to", mustPop(t, p, ctx, "dst"), `{"moved":true}`, true)
	want("a string moved by expire_to", mustPop(t, p, ctx, "dst"), `["a string"]`, false)

	// A fanout child's copy.
	mustPop(t, p, ctx, "orders+audit") // a pop references the child
	mustPush(t, p, ctx, job.Spec{Topic: "orders", Body: `{"order":7}`, BodyJSON: true})
	want("the parent's", mustPop(t, p, ctx, "orders"), `{"order":7}`, true)
	want("the child's copy", mustPop(t, p, ctx, "orders+audit"), `{"order":7}`, true)

	// A dead job retried.
	once := 1
	dead := mustPush(t, p, ctx, job.Spec{Topic: "d", Body: `[0]`, BodyJSON: true, TTR: time.Minute,
		Retry: &job.RetryPolicy{MaxAttempts: &once}})
	j := mustPop(t, p, ctx, "d")
	if j, err := p.Fail(ctx, num(dead), j.Attempt(), "boom"); err != nil || j.State != job.Dead {
		t.Fatalf("fail: %+v %v", j, err)
	}
	if n, err := p.RetryDead(ctx, "d", nil); err != nil || n != 1 {
		t.Fatalf("retry dead: %d %v", n, err)
	}
	want("a dead job retried", mustPop(t, p, ctx, "d"), `[0]`, true)

	// A unique push's replacement takes the mark with the body; a debounce
	// keeps the waiting job's.
	holder := mustPush(t, p, ctx, job.Spec{Topic: "r", Body: "old", Delay: time.Hour, Unique: uniq("k", job.UniqueReplace)})
	for _, r := range []struct {
		body   string
		asJSON bool
		mode   job.UniqueMode
		want   bool
	}{{`{"v":2}`, true, job.UniqueReplace, true}, {"plain", true, job.UniqueDebounce, true}, {`{"v":3}`, false, job.UniqueReplace, false}} {
		spec := job.Spec{Topic: "r", Body: r.body, BodyJSON: r.asJSON, Delay: time.Hour, Unique: uniq("k", r.mode)}
		if got, err := p.Push(ctx, spec); err != nil || got.ID != holder {
			t.Fatalf("%s push: %+v %v", r.mode, got, err)
		}
		if j, err := p.Peek(ctx, num(holder)); err != nil || j.BodyJSON != r.want {
			t.Fatalf("after a %s push of %s: %+v %v, want JSON %v", r.mode, r.body, j, err, r.want)
		}
	}

	// A schedule's fire: the mark is in its stored definition.
	spec := job.ScheduleSpec{Cron: "0 0 * * *", Job: job.Spec{Topic: "cron", Body: `{"report":"daily"}`, BodyJSON: true, Priority: 1}}
	if err := p.WriteSchedule(ctx, "daily", spec, "", "", time.Now().Add(-time.Millisecond), false); err != nil {
		t.Fatal(err)
	}
	if s, err := p.Schedule(ctx, "daily"); err != nil || !s.Spec.Job.BodyJSON {
		t.Fatalf("the stored schedule: %+v %v", s, err)
	}
	if _, _, err := p.Tick(ctx, p.BucketOf("cron"), scheduleDue+"daily"); err != nil {
		t.Fatal(err)
	}
	want("a schedule's fire", mustPop(t, p, ctx, "cron"), `{"report":"daily"}`, true)
	checkStore(t, p, ctx)
}

// A record an older broker wrote has no F_JSON: its body reads as a
// string, and the moves that rewrite the record leave it so, until a change
// gives it a JSON body. (Store format 1, whose records end at F_JSON.)
func TestRecordWithoutBodyJSON(t *testing.T) {
	p, ctx := newPoolWith(t, Options{ReadsFormat: 1})
	fields := fields - 1
	id := mustPush(t, p, ctx, job.Spec{Topic: "old", Body: `{"a":1}`, BodyJSON: true, TTR: time.Minute})
	if n, asJSON, _ := readRecord(t, p, ctx, "old", id, "strip"); n != fields-1 || asJSON != "nil" {
		t.Fatalf("stripped record: %d fields, F_JSON %s", n, asJSON)
	}
	if j, err := p.Peek(ctx, num(id)); err != nil || j.Body != `{"a":1}` || j.BodyJSON {
		t.Fatalf("an older record: %+v %v, want a string body", j, err)
	}
	moveAround(t, p, ctx, "old", id)
	if n, _, _ := readRecord(t, p, ctx, "old", id, ""); n != fields-1 {
		t.Fatalf("after its moves the record has %d fields, want %d", n, fields-1)
	}
	text := "plain"
	if j, err := p.UpdateJob(ctx, num(id), job.Update{Body: &text}); err != nil || j.BodyJSON {
		t.Fatalf("a string body: %+v %v", j, err)
	}
	obj := `{"b":2}`
	if j, err := p.UpdateJob(ctx, num(id), job.Update{Body: &obj, BodyJSON: true}); err != nil || !j.BodyJSON {
		t.Fatalf("a JSON body: %+v %v", j, err)
	}
	if n, asJSON, _ := readRecord(t, p, ctx, "old", id, ""); n != fields || asJSON != "1" {
		t.Fatalf("after a JSON body: %d fields, F_JSON %s", n, asJSON)
	}
	checkStore(t, p, ctx)
}

// A record a newer broker wrote may have fields after the last this
// version knows: every move rewrites the whole record (cmsgpack), so they
// come through unchanged, as this version's fields come through an older
// broker's moves.
func TestRecordWithALaterField(t *testing.T) {
	p, ctx := newPool(t)
	id := mustPush(t, p, ctx, job.Spec{Topic: "new", Body: `{"a":1}`, BodyJSON: true, TTR: time.Minute})
	readRecord(t, p, ctx, "new", id, "extend")
	moveAround(t, p, ctx, "new", id)
	pri := uint32(9)
	if _, err := p.UpdateJob(ctx, num(id), job.Update{Priority: &pri}); err != nil {
		t.Fatal(err)
	}
	if n, asJSON, next := readRecord(t, p, ctx, "new", id, ""); n != lua.FieldCount || asJSON != "1" || next != "future" {
		t.Fatalf("after its moves: %d fields, F_JSON %s, then %s; want %d, 1, future", n, asJSON, next, lua.FieldCount)
	}
	if j, err := p.Peek(ctx, num(id)); err != nil || !j.BodyJSON || j.Priority != 9 {
		t.Fatalf("the job: %+v %v", j, err)
	}
	checkStore(t, p, ctx)
}

// moveAround takes ready job id of topic through the moves that rewrite
// its record: pop, release, pop, bury, kick, pop, fail to dead, retry; it
// ends ready.
func moveAround(t *testing.T, p *Pool, ctx context.Context, topic string, id uint64) {
	t.Helper()
	once := 1
	steps := []struct {
		name string
		do   func(j *job.Job) (*job.Job, error)
	}{
		{"release", func(j *job.Job) (*job.Job, error) { return p.Release(ctx, num(id), j.Attempt(), job.KeepPriority, 0) }},
		{"bury", func(j *job.Job) (*job.Job, error) { return p.Bury(ctx, num(id), j.Attempt(), job.KeepPriority) }},
		{"kick", func(*job.Job) (*job.Job, error) { return p.KickJob(ctx, num(id)) }},
		{"fail", func(j *job.Job) (*job.Job, error) {
			if err := p.SetTopicConfig(ctx, topic, job.TopicConfig{"max_attempts": strconv.Itoa(once)}); err != nil {
				return nil, err
			}
			return p.Fail(ctx, num(id), j.Attempt(), "boom")
		}},
		{"retry", func(*job.Job) (*job.Job, error) {
			n, err := p.RetryDead(ctx, topic, nil)
			if err == nil && n != 1 {
				t.Fatalf("retried %d dead jobs, want 1", n)
			}
			return p.Peek(ctx, num(id))
		}},
	}
	var j *job.Job
	for _, s := range steps {
		if slices.Contains([]string{"release", "bury", "fail"}, s.name) {
			if j = mustPop(t, p, ctx, topic); j == nil || j.ID != id {
				t.Fatalf("before %s: popped %+v, want job %d", s.name, j, id)
			}
		}
		var err error
		if j, err = s.do(j); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
	}
	if j.State != job.Ready {
		t.Fatalf("after its moves the job is %s, want ready", j.State)
	}
}
