package dispatcher_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/dispatcher"
	"github.com/gmq/gmq/job"
)

// popOne pops one job of topics as a consumer does (nil: none within
// timeout).
func popOne(d *dispatcher.Dispatcher, ctx context.Context, topics []string, timeout time.Duration) (*job.Job, error) {
	return first(d.Pop(ctx, dispatcher.PopParams{Topics: topics, Timeout: timeout}))
}

// peekOne looks at the next ready job of topic, waiting up to timeout.
func peekOne(d *dispatcher.Dispatcher, ctx context.Context, topic string, timeout time.Duration) (*job.Job, error) {
	return first(d.Pop(ctx, dispatcher.PopParams{Topics: []string{topic}, Timeout: timeout, Keep: dispatcher.Peek}))
}

func first(jobs []*job.Job, err error) (*job.Job, error) {
	if len(jobs) == 0 {
		return nil, err
	}
	return jobs[0], err
}

// TestPopParams: each pop a consumer makes is one Pop with its params, and
// what gmq does not make is refused as invalid before anything is taken.
func TestPopParams(t *testing.T) {
	b := broker(t)
	d := b.Dispatcher
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		pushed []job.Spec           // into a fresh topic set ("a", "b" below are prefixed by the case)
		params dispatcher.PopParams // Topics named as in pushed
		want   []string             // bodies given, in order
		left   map[job.State]int    // what stays of the topics' jobs, by state
	}{
		{name: "a reserve of the first topic with a job",
			pushed: []job.Spec{{Topic: "b", Body: "b1"}, {Topic: "a", Body: "a1", Priority: 9}},
			params: dispatcher.PopParams{Topics: []string{"a", "b"}},
			want:   []string{"a1"}, left: map[job.State]int{job.Ready: 1, job.Reserved: 1}},
		{name: "beanstalkd's order: the best of all the topics",
			pushed: []job.Spec{{Topic: "b", Body: "b1", Priority: 1}, {Topic: "a", Body: "a1", Priority: 9}},
			params: dispatcher.PopParams{Topics: []string{"a", "b"}, Order: dispatcher.BestOrder},
			want:   []string{"b1"}, left: map[job.State]int{job.Ready: 1, job.Reserved: 1}},
		{name: "a take removes the job",
			pushed: []job.Spec{{Topic: "a", Body: "a1"}},
			params: dispatcher.PopParams{Topics: []string{"a"}, Keep: dispatcher.Take},
			want:   []string{"a1"}, left: map[job.State]int{}},
		{name: "a peek leaves the job ready",
			pushed: []job.Spec{{Topic: "a", Body: "a1"}},
			params: dispatcher.PopParams{Topics: []string{"a"}, Keep: dispatcher.Peek},
			want:   []string{"a1"}, left: map[job.State]int{job.Ready: 1}},
		{name: "a count takes as many as are ready",
			pushed: []job.Spec{{Topic: "a", Body: "a1"}, {Topic: "a", Body: "a2"}, {Topic: "a", Body: "a3"}},
			params: dispatcher.PopParams{Topics: []string{"a"}, Count: 2},
			want:   []string{"a1", "a2"}, left: map[job.State]int{job.Ready: 1, job.Reserved: 2}},
		{name: "nothing ready within the timeout", params: dispatcher.PopParams{Topics: []string{"a"}, Timeout: 10 * time.Millisecond},
			left: map[job.State]int{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := strings.NewReplacer(" ", "-", "'", "", ":", "").Replace(tc.name) + "/"
			topics := map[string]bool{}
			for _, s := range tc.pushed {
				s.Topic = prefix + s.Topic
				if s.Priority == 0 {
					s.Priority = job.DefaultPriority
				}
				s.TTR = time.Minute
				topics[s.Topic] = true
				if _, err := d.Push(ctx, s); err != nil {
					t.Fatal(err)
				}
			}
			p := tc.params
			p.Topics = nil
			for _, name := range tc.params.Topics {
				p.Topics = append(p.Topics, prefix+name)
			}
			jobs, err := d.Pop(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, j := range jobs {
				got = append(got, j.Body)
			}
			if len(got) != len(tc.want) || (len(got) > 0 && got[0] != tc.want[0]) || (len(got) > 1 && got[1] != tc.want[1]) {
				t.Errorf("popped %q, want %q", got, tc.want)
			}
			left := map[job.State]int{}
			for name := range topics {
				st, err := d.Topic(name).Stats(ctx)
				if err != nil {
					t.Fatal(err)
				}
				left[job.Ready] += int(st.Ready)
				left[job.Reserved] += int(st.Reserved)
			}
			for _, s := range []job.State{job.Ready, job.Reserved} {
				if left[s] != tc.left[s] {
					t.Errorf("%d jobs %s after it, want %d", left[s], s, tc.left[s])
				}
			}
		})
	}
}

func TestPopParamsRefused(t *testing.T) {
	d := broker(t).Dispatcher
	ack := &dispatcher.Ack{ID: "1"}
	for _, p := range []dispatcher.PopParams{
		{Topics: []string{"a"}, Count: -1},
		{Topics: []string{"a"}, Count: 2, Keep: dispatcher.Take},
		{Topics: []string{"a"}, Count: 2, Keep: dispatcher.Peek},
		{Topics: []string{"a", "b"}, Keep: dispatcher.Peek},
		{Topics: []string{"a"}, Count: 2, Order: dispatcher.BestOrder},
		{Topics: []string{"a"}, Keep: dispatcher.Take, Order: dispatcher.BestOrder},
		{Topics: []string{"a"}, After: ack, Keep: dispatcher.Take},
		{Topics: []string{"a"}, After: ack, Order: dispatcher.BestOrder},
		{},
	} {
		if _, err := d.Pop(context.Background(), p); !errors.Is(err, job.ErrInvalid) {
			t.Errorf("Pop(%+v): %v, want invalid", p, err)
		}
	}
}

// TestAckThenPopUnderQuiescent: the status refuses the pop of an ack with
// a pop after it, not the ack, which finishes a reservation: the ack
// stands, nothing is popped, and the error says the ack went through.
func TestAckThenPopUnderQuiescent(t *testing.T) {
	b := broker(t)
	d := b.Dispatcher
	ctx := context.Background()
	for _, body := range []string{"a", "b"} {
		if _, err := d.Push(ctx, job.Spec{Topic: "quiet", Body: body, Priority: job.DefaultPriority, TTR: time.Minute}); err != nil {
			t.Fatal(err)
		}
	}
	held, err := popOne(d, ctx, []string{"quiet"}, 0)
	if err != nil || held == nil {
		t.Fatalf("pop: %v %v", held, err)
	}
	if err := d.Status().Set(ctx, job.Quiescent); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = d.Status().Set(ctx, job.Up) }()
	jobs, err := d.Pop(ctx, dispatcher.PopParams{Topics: []string{"quiet"},
		After: &dispatcher.Ack{ID: held.PublicID(), Attempt: held.Attempt()}})
	var acked *job.AckedError
	if len(jobs) != 0 || !errors.As(err, &acked) || !errors.Is(err, job.ErrRefused) {
		t.Fatalf("ack then pop under quiescent: %v %v, want nothing popped and an acked refusal", jobs, err)
	}
	if _, err := d.Peek(ctx, held.PublicID()); !errors.Is(err, job.ErrNotFound) && !errors.Is(err, job.ErrRefused) {
		t.Fatalf("the acked job: %v, want it gone", err)
	}
	st, err := d.Topic("quiet").Stats(ctx)
	if err != nil || st.Ready != 1 || st.Reserved != 0 {
		t.Fatalf("the topic after: %+v %v, want one ready job and none reserved", st, err)
	}
}

// TestWaitAtMaxmemory: a pop that waits while Redis is at its maxmemory
// (which refuses the waiter's mark, a write) waits its time and answers
// nothing, and one woken meanwhile (a delayed job made ready by its
// bucket's timer, which runs at maxmemory) takes the job, as pops work
// there.
func TestWaitAtMaxmemory(t *testing.T) {
	b := broker(t)
	d := b.Dispatcher
	ctx := context.Background()
	if _, err := d.Push(ctx, job.Spec{Topic: "oom-later", Body: "x", Priority: job.DefaultPriority, TTR: time.Minute,
		Delay: time.Second}); err != nil {
		t.Fatal(err)
	}
	redis := brokertest.Redis()
	if reply, err := redis.Do("CONFIG", "SET", "maxmemory", "1"); err != nil || reply != "+OK" {
		t.Fatalf("CONFIG SET maxmemory: %q %v", reply, err)
	}
	defer func() { _, _ = redis.Do("CONFIG", "SET", "maxmemory", "0") }()
	jobs, err := d.Pop(ctx, dispatcher.PopParams{Topics: []string{"oom-empty"}, Timeout: 50 * time.Millisecond})
	if err != nil || len(jobs) != 0 {
		t.Fatalf("a waiting pop at maxmemory: %v %v, want nothing and no error", jobs, err)
	}
	// Waits until the job is due (a second), well within its minute.
	jobs, err = d.Pop(ctx, dispatcher.PopParams{Topics: []string{"oom-later"}, Timeout: time.Minute})
	if err != nil || len(jobs) != 1 || jobs[0].Body != "x" {
		t.Fatalf("a pop woken at maxmemory: %v %v, want the delayed job", jobs, err)
	}
}
