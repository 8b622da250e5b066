package dispatcher_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/job"
)

func TestMain(m *testing.M) { brokertest.Main(m) }

func broker(t *testing.T) *brokertest.Broker {
	t.Helper()
	return brokertest.Fresh(t, nil)
}

func push(t *testing.T, b *brokertest.Broker, j job.Spec) uint64 {
	t.Helper()
	if j.Priority == 0 {
		j.Priority = job.DefaultPriority
	}
	id, err := b.Dispatcher.Push(context.Background(), j)
	if err != nil {
		t.Fatalf("push: %v", err)
	}
	return id.ID
}

func TestLongPollWakesOnPush(t *testing.T) {
	b := broker(t)
	got := make(chan *job.Job, 1)
	go func() {
		j, err := b.Dispatcher.Pop(context.Background(), []string{"wake"}, 5*time.Second)
		if err != nil {
			t.Error(err)
		}
		got <- j
	}()
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	id := push(t, b, job.Spec{Topic: "wake", Body: "x", TTR: time.Minute})
	mustWake(t, got, id, start, "the push")
}

// mustWake waits for a waiting consumer's job on got: job want, within
// 100 ms of start, when what (the push, the ack...) happened: woken by it,
// not by a timer.
func mustWake(t *testing.T, got <-chan *job.Job, want uint64, start time.Time, what string) {
	t.Helper()
	select {
	case j := <-got:
		if j == nil || j.ID != want {
			t.Fatalf("got %+v, want job %d", j, want)
		}
		if took := time.Since(start); took > 100*time.Millisecond {
			t.Fatalf("the waiting consumer woke %v after %s", took, what)
		}
	case <-time.After(3 * time.Second):
		t.Fatalf("the waiting consumer never woke after %s", what)
	}
}

func TestLongPollTimesOut(t *testing.T) {
	b := broker(t)
	start := time.Now()
	j, err := b.Dispatcher.Pop(context.Background(), []string{"empty"}, 300*time.Millisecond)
	if err != nil || j != nil {
		t.Fatalf("got %+v %v, want nothing", j, err)
	}
	if took := time.Since(start); took < 300*time.Millisecond || took > time.Second {
		t.Fatalf("timed out after %v, want 300ms", took)
	}
}

func TestLongPollAcrossBrokers(t *testing.T) {
	a := broker(t)
	b := brokertest.Start(t, brokertest.Redis(), nil)
	for _, topic := range []string{"x1", "x2", "x3"} {
		got := make(chan *job.Job, 1)
		go func() {
			j, err := b.Dispatcher.Pop(context.Background(), []string{topic}, 5*time.Second)
			if err != nil {
				t.Error(err)
			}
			got <- j
		}()
		time.Sleep(100 * time.Millisecond) // let it register and mark the topic
		start := time.Now()
		id := push(t, a, job.Spec{Topic: topic, Body: "x", TTR: time.Minute})
		// Far below the bucket timer's 200ms cap: the wake-up came by pub/sub.
		mustWake(t, got, id, start, "a push through broker A")
	}
}

// Two brokers with eight consumers each race for the same jobs, some ready
// and some delayed (both brokers' timers move those); each job must be
// delivered once.
func TestTwoBrokersNeverDeliverTwice(t *testing.T) {
	a := broker(t)
	b := brokertest.Start(t, brokertest.Redis(), nil)
	const n = 600
	for i := range n {
		j := job.Spec{Topic: "race", Body: fmt.Sprint(i), TTR: time.Minute}
		if i%3 == 0 {
			j.Delay = time.Duration(i%200) * time.Millisecond
		}
		push(t, []*brokertest.Broker{a, b}[i%2], j)
	}
	var mu sync.Mutex
	seen := map[uint64]int{}
	var wg sync.WaitGroup
	for c := range 16 {
		br := []*brokertest.Broker{a, b}[c%2]
		wg.Go(func() {
			for {
				j, err := br.Dispatcher.Pop(context.Background(), []string{"race"}, 500*time.Millisecond)
				if err != nil {
					t.Error(err)
					return
				}
				if j == nil {
					return
				}
				mu.Lock()
				seen[j.ID]++
				mu.Unlock()
				if err := br.Dispatcher.Ack(context.Background(), j.PublicID(), j.Attempt()); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("delivered %d distinct jobs, want %d", len(seen), n)
	}
	for id, times := range seen {
		if times != 1 {
			t.Fatalf("job %d delivered %d times", id, times)
		}
	}
}

// A delayed job is never delivered before its due time, and (in a test run)
// at most 50ms after it, measured on Redis's clock.
func TestDelayNeverEarly(t *testing.T) {
	b := broker(t)
	const n = 40
	for i := range n {
		push(t, b, job.Spec{Topic: "later", Body: fmt.Sprint(i), TTR: time.Minute,
			Delay: time.Duration(100+i*13) * time.Millisecond})
	}
	for range n {
		j, err := b.Dispatcher.Pop(context.Background(), []string{"later"}, 3*time.Second)
		if err != nil || j == nil {
			t.Fatalf("pop: %+v %v", j, err)
		}
		due := j.Created.Add(j.Delay)
		reservedAt := j.Due.Add(-j.TTR)
		if reservedAt.Before(due) {
			t.Fatalf("job %d delivered %v early", j.ID, due.Sub(reservedAt))
		}
		if late := reservedAt.Sub(due); late > 50*time.Millisecond {
			t.Fatalf("job %d delivered %v late", j.ID, late)
		}
	}
}

// A reservation whose TTR runs out is delivered again within 100ms.
func TestTTRRedelivery(t *testing.T) {
	b := broker(t)
	id := push(t, b, job.Spec{Topic: "slow", Body: "x", TTR: 300 * time.Millisecond})
	first, err := b.Dispatcher.Pop(context.Background(), []string{"slow"}, time.Second)
	if err != nil || first == nil {
		t.Fatalf("first pop: %+v %v", first, err)
	}
	second, err := b.Dispatcher.Pop(context.Background(), []string{"slow"}, 3*time.Second)
	if err != nil || second == nil || second.ID != id {
		t.Fatalf("redelivery: %+v %v", second, err)
	}
	if second.Attempt() != 2 || second.Timeouts != 1 {
		t.Fatalf("redelivered job %+v, want attempt 2 and one timeout", second)
	}
	redeliveredAt := second.Due.Add(-second.TTR)
	if late := redeliveredAt.Sub(first.Due); late < 0 || late > 100*time.Millisecond {
		t.Fatalf("redelivered %v after the TTR ran out, want 0..100ms", late)
	}
	if err := b.Dispatcher.Ack(context.Background(), first.PublicID(), first.Attempt()); err == nil {
		t.Fatal("the first delivery's ack was accepted after redelivery")
	}
}

// A thousand consumers waiting in long polls share the broker's Redis
// connections instead of holding one each, and all get a job.
func TestThousandWaitersBoundedConnections(t *testing.T) {
	b := broker(t)
	before, err := brokertest.Redis().ConnectedClients()
	if err != nil {
		t.Fatal(err)
	}
	const n = 1000
	results := make(chan *job.Job, n)
	for range n {
		go func() {
			j, err := b.Dispatcher.Pop(context.Background(), []string{"crowd"}, 10*time.Second)
			if err != nil {
				t.Error(err)
			}
			results <- j
		}()
	}
	time.Sleep(500 * time.Millisecond)
	during, err := brokertest.Redis().ConnectedClients()
	if err != nil {
		t.Fatal(err)
	}
	if during-before > 2 {
		t.Fatalf("%d waiting consumers opened %d Redis connections", n, during-before)
	}
	for i := range n {
		push(t, b, job.Spec{Topic: "crowd", Body: fmt.Sprint(i), TTR: time.Minute})
	}
	seen := map[uint64]bool{}
	for range n {
		select {
		case j := <-results:
			if j == nil || seen[j.ID] {
				t.Fatalf("consumer got %+v (nil or a job another got)", j)
			}
			seen[j.ID] = true
		case <-time.After(5 * time.Second):
			t.Fatalf("only %d of %d waiting consumers got a job", len(seen), n)
		}
	}
}

func TestPausedTopicWakesWaiterWhenItResumes(t *testing.T) {
	b := broker(t)
	push(t, b, job.Spec{Topic: "p", Body: "x", TTR: time.Minute})
	if _, err := b.Dispatcher.Pause(context.Background(), "p", 300*time.Millisecond, false); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	j, err := b.Dispatcher.Pop(context.Background(), []string{"p"}, 3*time.Second)
	if err != nil || j == nil {
		t.Fatalf("pop: %+v %v", j, err)
	}
	if took := time.Since(start); took < 250*time.Millisecond || took > 500*time.Millisecond {
		t.Fatalf("got the job after %v, want when the 300ms pause ended", took)
	}
}

// A consumer waiting on two topics, woken for one but served from the other,
// passes the wake-up on so no ready job is left waiting.
func TestWakeUpHandedOn(t *testing.T) {
	b := broker(t)
	got := make(chan *job.Job, 2)
	pop := func(topics ...string) {
		j, err := b.Dispatcher.Pop(context.Background(), topics, 3*time.Second)
		if err != nil {
			t.Error(err)
		}
		got <- j
	}
	go pop("first", "second")
	time.Sleep(50 * time.Millisecond)
	go pop("second")
	time.Sleep(50 * time.Millisecond)
	// A ready job in "first" that woke nobody (straight into the store), then a
	// push to "second" that wakes the first consumer, the longest waiting
	// there. It pops "first" (its topic order) and must hand "second" on.
	if _, err := b.Pool.Push(context.Background(), job.Spec{Topic: "first", Body: "f", TTR: time.Minute}); err != nil {
		t.Fatal(err)
	}
	push(t, b, job.Spec{Topic: "second", Body: "s", TTR: time.Minute})
	for range 2 {
		select {
		case j := <-got:
			if j == nil {
				t.Fatal("a consumer got nothing while a job was ready")
			}
		case <-time.After(2 * time.Second):
			t.Fatal("a ready job was left with a consumer waiting for it")
		}
	}
}

// A peek that waits is woken by a push, like a pop, and passes the wake-up
// on to a consumer waiting behind it, which gets the job.
func TestPeekReadyWaits(t *testing.T) {
	b := brokertest.Fresh(t, nil)
	ctx := context.Background()
	peeked := make(chan *job.Job, 1)
	go func() {
		j, _ := b.Dispatcher.PeekReady(ctx, "pw", 5*time.Second)
		peeked <- j
	}()
	time.Sleep(200 * time.Millisecond) // the peek waits first
	popped := make(chan *job.Job, 1)
	go func() {
		j, _ := b.Dispatcher.Pop(ctx, []string{"pw"}, 5*time.Second)
		popped <- j
	}()
	time.Sleep(200 * time.Millisecond)
	if _, err := b.Dispatcher.Push(ctx, job.Spec{Topic: "pw", Body: "x", TTR: time.Minute}); err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct {
		name string
		ch   chan *job.Job
	}{{"peek", peeked}, {"pop", popped}} {
		select {
		case j := <-w.ch:
			if j == nil || j.Body != "x" {
				t.Fatalf("%s: %+v", w.name, j)
			}
		case <-time.After(3 * time.Second):
			t.Fatalf("%s was not woken by the push", w.name)
		}
	}
	if j, err := b.Dispatcher.PeekReady(ctx, "pw", 100*time.Millisecond); err != nil || j != nil {
		t.Fatalf("peek of an empty topic: %+v %v", j, err)
	}
}
