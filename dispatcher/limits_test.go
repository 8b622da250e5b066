package dispatcher_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/job"
)

// heldAtMaxReserved sets topic's max_reserved to 1 on broker a, pushes two
// jobs and reserves the first there, then starts a consumer waiting on b
// (a minute: longer than anything the test waits for) and checks that it
// is held back for a second. It returns the first job, the second's id,
// where the waiting consumer's job comes, and when its pop began.
func heldAtMaxReserved(t *testing.T, a, b *brokertest.Broker, topic string) (*job.Job, uint64, <-chan *job.Job, time.Time) {
	t.Helper()
	ctx := context.Background()
	if err := a.Dispatcher.Topic(topic).SetConfig(ctx, job.TopicConfig{"max_reserved": "1"}); err != nil {
		t.Fatal(err)
	}
	push(t, a, job.Spec{Topic: topic, Body: "1", TTR: time.Minute})
	second := push(t, a, job.Spec{Topic: topic, Body: "2", TTR: time.Minute})
	first, err := popOne(a.Dispatcher, ctx, []string{topic}, 0)
	if err != nil || first == nil {
		t.Fatalf("pop: %+v %v", first, err)
	}
	got := make(chan *job.Job, 1)
	began := time.Now()
	go func() {
		j, err := popOne(b.Dispatcher, ctx, []string{topic}, time.Minute)
		if err != nil {
			t.Error(err)
		}
		got <- j
	}()
	waiting(t, b, topic, 1)
	// Held back a second from here: a lower bound, which load only
	// lengthens; the second (rather than less) leaves room for the pop that
	// finds it held to finish after it was counted as waiting.
	time.Sleep(time.Second)
	select {
	case j := <-got:
		t.Fatalf("a pop at max_reserved got %+v", j)
	default:
	}
	return first, second, got, began
}

// A consumer waiting on a topic held at max_reserved, on another broker, is
// woken by the ack that frees a slot: not by a timer, and not later.
func TestFreedSlotWakesWaiterOnAnotherBroker(t *testing.T) {
	a := brokertest.Fresh(t, slowTimers)
	b := brokertest.Start(t, brokertest.Redis(), slowTimers)
	ctx := context.Background()
	first, second, got, began := heldAtMaxReserved(t, a, b, "m")
	start := time.Now()
	if err := ackOne(a.Dispatcher, ctx, strconv.FormatUint(first.ID, 10), first.Attempt()); err != nil {
		t.Fatal(err)
	}
	mustWake(t, got, second, start, "the ack on the other broker")
	// It was held back about a second: the topic's stats count that time,
	// no more than the pop lasted.
	lasted := time.Since(began)
	st, err := a.Dispatcher.Topic("m").Stats(ctx)
	if err != nil || st.LimitedTime < 250*time.Millisecond || st.LimitedTime > lasted {
		t.Fatalf("the topic's time held back: %v, %v; want about a second, at most %v", st.LimitedTime, err, lasted)
	}
}

// A consumer waiting on a topic its rate holds back gets the next job when
// the next token comes.
func TestRateWakesWaiterAtTheNextToken(t *testing.T) {
	b := broker(t)
	ctx := context.Background()
	if err := b.Dispatcher.Topic("r").SetConfig(ctx, job.TopicConfig{"rate": "4"}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		push(t, b, job.Spec{Topic: "r", Body: "x", TTR: time.Minute})
	}
	start := time.Now()
	for i := range 3 {
		j, err := popOne(b.Dispatcher, ctx, []string{"r"}, time.Minute)
		if err != nil || j == nil {
			t.Fatalf("pop %d: %+v %v", i, j, err)
		}
		// One at once (burst 1), then one every 250 ms: never sooner; and
		// at the token, not at the pop's one-minute timeout. It takes
		// milliseconds past want; 5 s is the margin for a loaded machine.
		want := time.Duration(i) * 250 * time.Millisecond
		if took := time.Since(start); took < want-20*time.Millisecond || took > want+5*time.Second {
			t.Fatalf("pop %d came after %v, want about %v", i, took, want)
		}
	}
}

// A limit raised at run time wakes the consumers it held back, on every
// broker, instead of leaving them to their timeout.
func TestRaisedLimitWakesWaiters(t *testing.T) {
	a := brokertest.Fresh(t, slowTimers)
	b := brokertest.Start(t, brokertest.Redis(), slowTimers)
	_, second, got, _ := heldAtMaxReserved(t, a, b, "raise")
	start := time.Now()
	if err := a.Dispatcher.Topic("raise").SetConfig(context.Background(), job.TopicConfig{"max_reserved": "5"}); err != nil {
		t.Fatal(err)
	}
	mustWake(t, got, second, start, "max_reserved raised on the other broker")
}
