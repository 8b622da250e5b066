package pool

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gmq/gmq/job"
	"github.com/gmq/gmq/lua"
)

// failing is one failure of a job in TestJobKeepsItsErrors: a fail with
// its error, or its TTR run out (ttr).
type failing struct {
	err string
	ttr bool
}

// A failed job keeps each attempt's error, the last job.ErrorsKept, each
// cut to job.ErrorBytes (not inside a character), with its attempt and
// time, oldest first: a fail without an error says none was given, a TTR
// that ran out says so. The list is in the job's record, so the store
// checks clean with it, and a delete leaves nothing of it.
func TestJobKeepsItsErrors(t *testing.T) {
	long := strings.Repeat("é", job.ErrorBytes) // 2 bytes each: a cut at an odd byte would split one
	attempts := func(from, to int) []int {
		var out []int
		for a := from; a <= to; a++ {
			out = append(out, a)
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		fails    []failing
		attempts []int    // the attempts the job's errors name, oldest first
		errors   []string // nil: each fail's own ("" is job.NoReason)
	}{
		{"three with errors, one without", []failing{{err: "smtp 550"}, {err: "smtp 451"}, {err: "timeout"}, {err: ""}},
			attempts(1, 4), []string{"smtp 550", "smtp 451", "timeout", job.NoReason}},
		{"TTRs that ran out", []failing{{ttr: true}, {ttr: true}},
			attempts(1, 2), []string{"ttr expired", "ttr expired"}},
		{"eleven: the oldest dropped", func() []failing {
			var f []failing
			for i := 1; i <= 11; i++ {
				f = append(f, failing{err: "error " + strconv.Itoa(i)})
			}
			return f
		}(), attempts(2, 11), func() []string {
			var e []string
			for i := 2; i <= 11; i++ {
				e = append(e, "error "+strconv.Itoa(i))
			}
			return e
		}()},
		{"an error past the bound, cut", []failing{{err: "x" + long}},
			attempts(1, 1), []string{"x" + long[:job.ErrorBytes-1-1]}}, // 1 + 2k bytes: the é across the bound goes whole
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, ctx := newPool(t)
			if err := p.SetTopicConfig(ctx, "e", job.TopicConfig{"backoff": "fixed", "backoff_base": "0"}); err != nil {
				t.Fatal(err)
			}
			ttr := time.Minute
			if tc.fails[0].ttr {
				ttr = 20 * time.Millisecond // every failure of the case its TTR run out
			}
			id := job.PublicID("", mustPush(t, p, ctx, job.Spec{Topic: "e", Body: "x", TTR: ttr}))
			start := time.Now().Add(-time.Second)
			var got *job.Job
			for i, f := range tc.fails {
				got = failOnce(t, p, ctx, id, f)
				if got.Failures != i+1 {
					t.Fatalf("failure %d: %d failures", i+1, got.Failures)
				}
			}
			if len(got.Errors) != len(tc.attempts) {
				t.Fatalf("%d errors kept, want %d: %+v", len(got.Errors), len(tc.attempts), got.Errors)
			}
			last := start
			for i, e := range got.Errors {
				if e.Attempt != tc.attempts[i] || e.Error != tc.errors[i] || e.At.Before(last) || e.At.After(got.Now) {
					t.Errorf("error %d: attempt %d at %v %.40q, want attempt %d %.40q at or after %v", i, e.Attempt, e.At, e.Error, tc.attempts[i], tc.errors[i], last)
				}
				if !utf8.ValidString(e.Error) || len(e.Error) > job.ErrorBytes {
					t.Errorf("error %d: %d bytes, valid UTF-8 %v", i, len(e.Error), utf8.ValidString(e.Error))
				}
				last = e.At
			}
			if want := tc.errors[len(tc.errors)-1]; got.LastError != want {
				t.Errorf("last error %.40q, want %.40q", got.LastError, want)
			}
			if peeked, err := p.Peek(ctx, id); err != nil || fmt.Sprint(peeked.Errors) != fmt.Sprint(got.Errors) {
				t.Errorf("the job read again: %+v %v, want %+v", peeked, err, got.Errors)
			}
			checkClean(t, p, ctx)
			mustPop(t, p, ctx, "e")
			if err := p.Delete(ctx, id, 0); err != nil {
				t.Fatal(err)
			}
			checkClean(t, p, ctx)
		})
	}
}

// failOnce pops job id and fails it as f says (its TTR, short, run out:
// put back by the timer's tick), and returns it as it then is.
func failOnce(t *testing.T, p *Pool, ctx context.Context, id string, f failing) *job.Job {
	t.Helper()
	j := mustPop(t, p, ctx, "e")
	if j == nil || j.PublicID() != id {
		t.Fatalf("popped %+v, want %s", j, id)
	}
	if !f.ttr {
		got, err := p.Fail(ctx, id, j.Attempt(), f.err)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	for {
		time.Sleep(5 * time.Millisecond) // the TTR's end, by Redis's clock: a wait for a condition
		if _, _, err := p.Tick(ctx, p.BucketOf("e"), "e"); err != nil {
			t.Fatal(err)
		}
		got, err := p.Peek(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if got.State != job.Reserved {
			return got
		}
	}
}

// A job that never fails pays nothing for the errors a failed one keeps:
// its record has no list through push, pop and an ack that keeps it; a
// dead job lists its errors, and keeps them when retried (its failures
// forgotten, its attempts counted on); a replace forgets them with the
// job it replaces.
func TestErrorsOnlyOnFailedJobs(t *testing.T) {
	p, ctx := newPool(t)
	if err := p.SetTopicConfig(ctx, "e", job.TopicConfig{"keep_completed": "60", "max_attempts": "2", "backoff": "fixed", "backoff_base": "0"}); err != nil {
		t.Fatal(err)
	}
	fine := mustPush(t, p, ctx, job.Spec{Topic: "e", Body: "x", TTR: time.Minute})
	hasErrors := func(n uint64) bool {
		packed, err := p.client.Do(ctx, p.client.B().Hget().Key(p.keys.buckets[p.keys.bucketOf("e")].jobs).Field(member(n)).Build()).ToString()
		if err != nil {
			t.Fatal(err)
		}
		r, err := decodeRecord(packed)
		if err != nil {
			t.Fatal(err)
		}
		return r.has[lua.FieldErrors]
	}
	if hasErrors(fine) {
		t.Fatal("a pushed job's record has errors")
	}
	j := mustPop(t, p, ctx, "e")
	if hasErrors(fine) {
		t.Fatal("a popped job's record has errors")
	}
	if err := p.Ack(ctx, j.PublicID(), j.Attempt(), ""); err != nil {
		t.Fatal(err)
	}
	if hasErrors(fine) {
		t.Fatal("a completed job's record has errors")
	}

	dies := job.PublicID("", mustPush(t, p, ctx, job.Spec{Topic: "e", Body: "y", TTR: time.Minute}))
	failOnce(t, p, ctx, dies, failing{err: "first"})
	if got := failOnce(t, p, ctx, dies, failing{err: "second"}); got.State != job.Dead {
		t.Fatalf("after max_attempts: %+v", got)
	}
	dead, _, err := p.ListJobs(ctx, "e", job.Dead, 0, 10)
	if err != nil || len(dead) != 1 || len(dead[0].Errors) != 2 || dead[0].Errors[1].Error != "second" {
		t.Fatalf("the dead list: %+v %v", dead, err)
	}
	if n, err := p.RetryDead(ctx, "e", []string{dies}); err != nil || n != 1 {
		t.Fatalf("retry: %d %v", n, err)
	}
	got := failOnce(t, p, ctx, dies, failing{err: "third"})
	if got.Failures != 1 || len(got.Errors) != 3 || got.Errors[2].Attempt != 3 || got.Errors[2].Error != "third" {
		t.Fatalf("a retried job failed again: %d failures, errors %+v", got.Failures, got.Errors)
	}
	if err := p.Delete(ctx, dies, 0); err != nil {
		t.Fatal(err)
	}

	replaced := job.PublicID("", mustPush(t, p, ctx, job.Spec{Topic: "e", Body: "a", TTR: time.Minute, Unique: uniq("r", job.UniqueReplace)}))
	failOnce(t, p, ctx, replaced, failing{err: "no"})
	if _, err := p.Push(ctx, job.Spec{Topic: "e", Body: "b", TTR: time.Minute, Priority: job.DefaultPriority, Unique: uniq("r", job.UniqueReplace)}); err != nil {
		t.Fatal(err)
	}
	if got, err := p.Peek(ctx, replaced); err != nil || got.Body != "b" || got.Failures != 0 || got.LastError != "" || got.Errors != nil {
		t.Fatalf("the replaced job: %+v %v", got, err)
	}
	checkClean(t, p, ctx)
}

// pool.Check finds a job whose errors pass their bounds (more than
// job.ErrorsKept, or one longer than job.ErrorBytes), which no script
// writes.
func TestCheckBoundsErrors(t *testing.T) {
	tooLong := fmt.Sprintf(`[[1, 1, %q]]`, strings.Repeat("x", job.ErrorBytes+1))
	var tooMany []string
	for i := range job.ErrorsKept + 1 {
		tooMany = append(tooMany, fmt.Sprintf(`[%d, 1, "e"]`, i+1))
	}
	for _, tc := range []struct {
		name, errors, want string
	}{
		{"too many", "[" + strings.Join(tooMany, ",") + "]", "keeps 11 failure entries, over 10"},
		{"too long", tooLong, "has a failure entry over 1 KiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, ctx := newPool(t)
			n := mustPush(t, p, ctx, job.Spec{Topic: "e", Body: "x", TTR: time.Minute})
			set := `local j = cmsgpack.unpack(redis.call('HGET', KEYS[1], ARGV[1])); j[tonumber(ARGV[2])] = ARGV[3]; redis.call('HSET', KEYS[1], ARGV[1], cmsgpack.pack(j)); return 1`
			jobs := p.keys.buckets[p.keys.bucketOf("e")].jobs
			if err := p.client.Do(ctx, p.client.B().Eval().Script(set).Numkeys(1).Key(jobs).
				Arg(member(n), strconv.Itoa(int(lua.FieldErrors)), tc.errors).Build()).Error(); err != nil {
				t.Fatal(err)
			}
			problems, err := p.Check(ctx)
			if err != nil || len(problems) != 1 || !strings.Contains(problems[0], tc.want) {
				t.Fatalf("check: %q %v, want %q", problems, err, tc.want)
			}
		})
	}
}

// A store below format 3 keeps only a failed job's last error: its older
// brokers may read neither a record with a hole nor a field they do not
// know. Once at 3, every broker does, so no new format is needed.
func TestErrorsWaitForFormatThree(t *testing.T) {
	for _, tc := range []struct {
		format int
		kept   int
	}{{1, 0}, {2, 0}, {3, 1}} {
		t.Run(fmt.Sprint("format ", tc.format), func(t *testing.T) {
			p, ctx := newPoolWith(t, Options{ReadsFormat: tc.format})
			id := job.PublicID("", mustPush(t, p, ctx, job.Spec{Topic: "e", Body: "x", TTR: time.Minute}))
			got := failOnce(t, p, ctx, id, failing{err: "smtp 550"})
			if got.LastError != "smtp 550" || len(got.Errors) != tc.kept {
				t.Fatalf("last error %q, errors %+v: want %d kept", got.LastError, got.Errors, tc.kept)
			}
			checkClean(t, p, ctx)
		})
	}
}
