package pool

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gmq/gmq/job"
)

// Many callers at once, each with its own outcome, get their own replies
// whether their operations go alone or in batches: every job is pushed,
// popped and acked exactly once, refusals reach the right caller, and the
// store is consistent after.
func TestBatchedCallersGetTheirOwnReplies(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
		// batches: whether the operations must have shared script calls
		batches bool
	}{
		{"unbatched", Options{MaxOpsPerCall: 1}, false},
		{"one slot, small batches", Options{BatchSlots: 1, MaxOpsPerCall: 3}, true},
		{"defaults", Options{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, ctx := newPoolWith(t, tc.opts)
			const n = 200
			var wg sync.WaitGroup
			ids := make([]uint64, n)
			errs := make([]error, n)
			for i := range n {
				wg.Go(func() {
					got, err := p.Push(ctx, job.Spec{Topic: "b", Body: strconv.Itoa(i), Priority: job.DefaultPriority, TTR: time.Minute})
					ids[i], errs[i] = got.ID, err
				})
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Fatalf("push %d: %v", i, err)
				}
			}

			// Pops, and acks of jobs that do not exist, in the same batches.
			bodies := make([]string, n)
			for i := range n {
				wg.Go(func() {
					got, err := p.Pop(ctx, []string{"b"})
					if err != nil || got.Job == nil {
						errs[i] = fmt.Errorf("pop: %+v %v", got, err)
						return
					}
					bodies[i] = got.Job.Body
				})
				wg.Go(func() {
					if err := p.Delete(ctx, num(uint64(1_000_000+i*4)), 0); !errors.Is(err, job.ErrNotFound) {
						t.Errorf("delete of a job that does not exist: %v, want ErrNotFound", err)
					}
				})
			}
			wg.Wait()
			seen := map[string]bool{}
			for i, err := range errs {
				if err != nil {
					t.Fatalf("caller %d: %v", i, err)
				}
				if seen[bodies[i]] {
					t.Fatalf("job %q popped twice", bodies[i])
				}
				seen[bodies[i]] = true
			}

			for i := range n {
				wg.Go(func() { errs[i] = p.Delete(ctx, num(ids[i]), 1) })
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Fatalf("ack %d: %v", i, err)
				}
			}
			want := job.Counters{Jobs: n, Reserves: n, Deletes: n, QueueCreates: 1}
			if got, err := p.Stats(ctx); err != nil || got != want {
				t.Fatalf("stats %+v %v, want %+v", got, err, want)
			}
			if problems, err := p.Check(ctx); err != nil || len(problems) > 0 {
				t.Fatalf("check: %v %v", problems, err)
			}
			st := p.BatchStats()
			if st.Ops != 4*n {
				t.Errorf("batched %d operations, want %d", st.Ops, 4*n)
			}
			if tc.batches && st.Calls >= st.Ops {
				t.Errorf("%d operations took %d script calls: no batching", st.Ops, st.Calls)
			}
			if tc.opts.MaxOpsPerCall == 1 && st.Calls != st.Ops {
				t.Errorf("unbatched: %d operations took %d script calls", st.Ops, st.Calls)
			}
			t.Logf("%d operations in %d script calls", st.Ops, st.Calls)
		})
	}
}

// A caller that gave up before its batch ran changes nothing.
func TestBatchSkipsCallersThatGaveUp(t *testing.T) {
	p, ctx := newPool(t)
	gone, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := p.Push(gone, job.Spec{Topic: "g", Body: "x", TTR: time.Minute}); !errors.Is(err, context.Canceled) {
		t.Fatalf("push with a cancelled context: %v, want context.Canceled", err)
	}
	if got, err := p.Stats(ctx); err != nil || got != (job.Counters{}) {
		t.Fatalf("stats after a push given up: %+v %v, want nothing stored", got, err)
	}
}

// A batch's context outlives any one caller's, up to the latest deadline.
func TestBatchContext(t *testing.T) {
	base := context.Background()
	soon, cancel1 := context.WithTimeout(base, time.Second)
	defer cancel1()
	later, cancel2 := context.WithTimeout(base, time.Hour)
	defer cancel2()
	ctx, cancel := batchContext([]*op{{ctx: soon}, {ctx: later}})
	defer cancel()
	if d, ok := ctx.Deadline(); !ok || d.Before(time.Now().Add(59*time.Minute)) {
		t.Errorf("deadline %v %v, want the later caller's", d, ok)
	}
	cancel1()
	if ctx.Err() != nil {
		t.Errorf("one caller's cancel ended the batch: %v", ctx.Err())
	}
	ctx, cancel = batchContext([]*op{{ctx: later}, {ctx: base}})
	defer cancel()
	if _, ok := ctx.Deadline(); ok {
		t.Error("a batch with a caller without deadline has a deadline")
	}
}

// PopN takes as many ready jobs as asked for and are there, in Pop's order:
// the first topic's before the next one's, each topic's FIFO; a large n
// goes in chunks.
func TestPopN(t *testing.T) {
	p, ctx := newPool(t)
	var want []string
	for i := range 3 {
		mustPush(t, p, ctx, job.Spec{Topic: "first", Body: fmt.Sprint("first ", i), TTR: time.Minute})
		want = append(want, fmt.Sprint("first ", i))
	}
	for i := range 2 {
		mustPush(t, p, ctx, job.Spec{Topic: "second", Body: fmt.Sprint("second ", i), TTR: time.Minute})
		want = append(want, fmt.Sprint("second ", i))
	}
	bodies := func(got Popped) []string {
		var out []string
		if got.Job != nil {
			out = append(out, got.Job.Body)
		}
		for _, j := range got.Rest {
			out = append(out, j.Body)
		}
		return out
	}
	got, err := p.PopN(ctx, []string{"first", "second"}, 4)
	if err != nil || fmt.Sprint(bodies(got)) != fmt.Sprint(want[:4]) || !got.More || got.Last().Body != "second 0" {
		t.Fatalf("pop 4: %v more=%v %v, want %v and more", bodies(got), got.More, err, want[:4])
	}
	for _, j := range append(got.Rest, got.Job) {
		if j.State != job.Reserved || j.Attempt() != 1 {
			t.Fatalf("popped %+v, want reserved on attempt 1", j)
		}
	}
	got, err = p.PopN(ctx, []string{"first", "second"}, 10)
	if err != nil || fmt.Sprint(bodies(got)) != fmt.Sprint(want[4:]) || got.More {
		t.Fatalf("pop 10: %v more=%v %v, want %v and no more", bodies(got), got.More, err, want[4:])
	}
	if got, err = p.PopN(ctx, []string{"first", "second"}, 10); err != nil || got.Job != nil {
		t.Fatalf("pop from empty topics: %+v %v", got, err)
	}

	const many = 2*popChunk + 50
	for i := range many {
		mustPush(t, p, ctx, job.Spec{Topic: "many", Body: strconv.Itoa(i), TTR: time.Minute})
	}
	got, err = p.PopN(ctx, []string{"many"}, many)
	if err != nil || len(got.Rest)+1 != many || got.Job.Body != "0" || got.Last().Body != strconv.Itoa(many-1) || got.More {
		t.Fatalf("pop %d: got %d jobs, more=%v, %v", many, len(got.Rest)+1, got.More, err)
	}
	if problems, err := p.Check(ctx); err != nil || len(problems) > 0 {
		t.Fatalf("check: %v %v", problems, err)
	}
}

// Operations of every kind at once, with one slot so that they share
// batches: pushes, single and batch pops, acks that pop the next, deletes of
// jobs that do not exist, and peeks across buckets. Every job is delivered
// exactly once and the store stays consistent.
func TestMixedBatches(t *testing.T) {
	p, ctx := newPoolWith(t, Options{BatchSlots: 1, MaxOpsPerCall: 16})
	const jobs = 300
	topics := []string{"m1", "m2", "m3"} // over several buckets
	var wg sync.WaitGroup
	for i := range jobs {
		wg.Go(func() {
			if _, err := p.Push(ctx, job.Spec{Topic: topics[i%3], Body: strconv.Itoa(i), Priority: job.DefaultPriority, TTR: time.Minute}); err != nil {
				t.Error(err)
			}
		})
	}
	var mu sync.Mutex
	seen := map[string]int{}
	deliver := func(js ...*job.Job) {
		mu.Lock()
		defer mu.Unlock()
		for _, j := range js {
			seen[j.Body]++
		}
	}
	for range 10 { // chained consumers: ack each job and pop the next
		wg.Go(func() {
			var held *job.Job
			for idle := 0; idle < 20; {
				var got Popped
				var err error
				if held == nil {
					got, err = p.Pop(ctx, topics)
				} else {
					got, err = p.AckAndPop(ctx, num(held.ID), held.Attempt(), "", []string{held.Topic})
				}
				if err != nil {
					t.Error(err)
					return
				}
				if held = got.Job; held == nil {
					idle++
					time.Sleep(time.Millisecond)
					continue
				}
				deliver(held)
			}
		})
	}
	for range 5 { // batch consumers
		wg.Go(func() {
			for idle := 0; idle < 20; {
				got, err := p.PopN(ctx, topics, 3)
				if err != nil {
					t.Error(err)
					return
				}
				if got.Job == nil {
					idle++
					time.Sleep(time.Millisecond)
					continue
				}
				all := append([]*job.Job{got.Job}, got.Rest...)
				deliver(all...)
				for _, j := range all {
					if err := p.Delete(ctx, num(j.ID), j.Attempt()); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	for i := range 20 { // noise: unknown jobs, peeks across buckets
		wg.Go(func() {
			if err := p.Delete(ctx, num(uint64(5_000_000+i*4)), 0); !errors.Is(err, job.ErrNotFound) {
				t.Errorf("delete of an unknown job: %v", err)
			}
			if _, err := p.PopBest(ctx, []string{"empty-a", "empty-b", "empty-c"}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	// Chained consumers hold their last job unacked; ack what is left.
	for _, topic := range topics {
		for {
			got, err := p.Pop(ctx, []string{topic})
			if err != nil {
				t.Fatal(err)
			}
			if got.Job == nil {
				break
			}
			deliver(got.Job)
		}
	}
	if len(seen) != jobs {
		t.Fatalf("%d distinct jobs delivered, want %d", len(seen), jobs)
	}
	for body, n := range seen {
		if n != 1 {
			t.Fatalf("job %s delivered %d times", body, n)
		}
	}
	if problems, err := p.Check(ctx); err != nil || len(problems) > 0 {
		t.Fatalf("check: %v %v", problems, err)
	}
	st := p.BatchStats()
	t.Logf("%d operations in %d script calls", st.Ops, st.Calls)
}

// Many batch pops in shared script calls take thousands of jobs in one call;
// each job goes to one caller.
func TestLargeBatches(t *testing.T) {
	p, ctx := newPoolWith(t, Options{BatchSlots: 1})
	const jobs, callers = 3000, 30
	batch := make([]job.Spec, jobs)
	for i := range batch {
		batch[i] = job.Spec{Topic: "large", Body: strconv.Itoa(i), Priority: job.DefaultPriority, TTR: time.Minute}
	}
	if _, errs := p.PushBatch(ctx, batch); errors.Join(errs...) != nil {
		t.Fatal(errors.Join(errs...))
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	seen := map[string]bool{}
	for range callers {
		wg.Go(func() {
			got, err := p.PopN(ctx, []string{"large"}, jobs/callers)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, j := range append([]*job.Job{got.Job}, got.Rest...) {
				if j == nil || seen[j.Body] {
					t.Errorf("job %+v missing or popped twice", j)
					return
				}
				seen[j.Body] = true
			}
		})
	}
	wg.Wait()
	if len(seen) != jobs {
		t.Fatalf("%d jobs popped, want %d", len(seen), jobs)
	}
	if problems, err := p.Check(ctx); err != nil || len(problems) > 0 {
		t.Fatalf("check: %v %v", problems, err)
	}
}
