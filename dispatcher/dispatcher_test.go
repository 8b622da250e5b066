package dispatcher_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
	"github.com/gmq/gmq/dispatcher"
	"github.com/gmq/gmq/job"
)

func TestMain(m *testing.M) { brokertest.Main(m) }

func broker(t *testing.T) *brokertest.Broker {
	t.Helper()
	return brokertest.Fresh(t, nil)
}

// slowTimers lets the bucket timers sleep up to a minute between rounds
// (brokertest's default is 200 ms): in a test that checks that a consumer
// is woken by something (a push, an ack, a due time), no idle round can
// have done it instead, however long a loaded machine takes over it.
func slowTimers(c *config.Config) { c.BucketMaxSleep = time.Minute }

// waiting waits until n consumers wait on topic in a long poll on b, so
// what the test does next happens while they wait.
func waiting(t *testing.T, b *brokertest.Broker, topic string, n int) {
	t.Helper()
	brokertest.Eventually(t, fmt.Sprintf("%d consumers waiting on %s", n, topic), func() bool {
		return b.Dispatcher.WaitingOn(topic) == n
	})
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
	b := brokertest.Fresh(t, slowTimers)
	got := make(chan *job.Job, 1)
	go func() {
		j, err := popOne(b.Dispatcher, context.Background(), []string{"wake"}, time.Minute)
		if err != nil {
			t.Error(err)
		}
		got <- j
	}()
	waiting(t, b, "wake", 1)
	start := time.Now()
	id := push(t, b, job.Spec{Topic: "wake", Body: "x", TTR: time.Minute})
	mustWake(t, got, id, start, "the push")
}

// mustWake waits for a waiting consumer's job on got: job want, when what
// (the push, the ack...) happened at start: woken by it, not by a timer.
// The consumer waits a minute and the broker's timers (slowTimers) sleep a
// minute, so only a wake-up answers within 30 s; that margin, and not a
// tight one, is what lets a loaded machine pass (it takes milliseconds).
func mustWake(t *testing.T, got <-chan *job.Job, want uint64, start time.Time, what string) {
	t.Helper()
	select {
	case j := <-got:
		if j == nil || j.ID != want {
			t.Fatalf("got %+v, want job %d", j, want)
		}
		if took := time.Since(start); took > 30*time.Second {
			t.Fatalf("the waiting consumer woke %v after %s", took, what)
		}
	case <-time.After(90 * time.Second):
		t.Fatalf("the waiting consumer never woke after %s", what)
	}
}

func TestLongPollTimesOut(t *testing.T) {
	b := broker(t)
	start := time.Now()
	j, err := popOne(b.Dispatcher, context.Background(), []string{"empty"}, 300*time.Millisecond)
	if err != nil || j != nil {
		t.Fatalf("got %+v %v, want nothing", j, err)
	}
	// Not before 300 ms; the upper bound only says it did time out rather
	// than hang, generous for a loaded machine.
	if took := time.Since(start); took < 300*time.Millisecond || took > 30*time.Second {
		t.Fatalf("timed out after %v, want 300ms", took)
	}
}

func TestLongPollAcrossBrokers(t *testing.T) {
	a := brokertest.Fresh(t, slowTimers)
	b := brokertest.Start(t, brokertest.Redis(), slowTimers)
	for _, topic := range []string{"x1", "x2", "x3"} {
		got := make(chan *job.Job, 1)
		go func() {
			j, err := popOne(b.Dispatcher, context.Background(), []string{topic}, time.Minute)
			if err != nil {
				t.Error(err)
			}
			got <- j
		}()
		waiting(t, b, topic, 1)
		start := time.Now()
		id := push(t, a, job.Spec{Topic: topic, Body: "x", TTR: time.Minute})
		// Far below the bucket timers' one-minute cap: the wake-up came by pub/sub.
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
	// Until every job has come, a consumer waits up to a minute for the
	// next (a loaded machine's timers may move the delayed ones late); then
	// all is cancelled and each looks on for 500 ms more, for a second delivery.
	all, allSeen := context.WithCancel(context.Background())
	defer allSeen()
	var wg sync.WaitGroup
	for c := range 16 {
		br := []*brokertest.Broker{a, b}[c%2]
		wg.Go(func() {
			for {
				ctx, wait := all, time.Minute
				if all.Err() != nil {
					ctx, wait = context.Background(), 500*time.Millisecond
				}
				j, err := popOne(br.Dispatcher, ctx, []string{"race"}, wait)
				if err != nil && ctx.Err() != nil {
					continue // every job seen meanwhile: look on without the minute
				}
				if err != nil {
					t.Error(err)
					return
				}
				if j == nil {
					return
				}
				mu.Lock()
				seen[j.ID]++
				if len(seen) == n {
					allSeen()
				}
				mu.Unlock()
				if err := ackOne(br.Dispatcher, context.Background(), j.PublicID(), j.Attempt()); err != nil {
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

// A delayed job is never delivered before its due time, and it is moved at
// its due time, not at a timer's idle round, measured on Redis's clock.
func TestDelayNeverEarly(t *testing.T) {
	b := brokertest.Fresh(t, slowTimers)
	const n = 40
	for i := range n {
		push(t, b, job.Spec{Topic: "later", Body: fmt.Sprint(i), TTR: time.Minute,
			Delay: time.Duration(100+i*13) * time.Millisecond})
	}
	for range n {
		asked := time.Now() // Redis runs on this machine: one clock
		j, err := popOne(b.Dispatcher, context.Background(), []string{"later"}, time.Minute)
		if err != nil || j == nil {
			t.Fatalf("pop: %+v %v", j, err)
		}
		due := j.Created.Add(j.Delay)
		reservedAt := j.Due.Add(-j.TTR)
		if reservedAt.Before(due) {
			t.Fatalf("job %d delivered %v early", j.ID, due.Sub(reservedAt))
		}
		// Late counts from when it was both due and asked for (a slow test
		// loop asks late). The timers sleep a minute when idle (slowTimers),
		// so a job within 5 s came at its due time; it takes milliseconds,
		// and 5 s is the margin for a loaded machine.
		if late := reservedAt.Sub(later(due, asked)); late > 5*time.Second {
			t.Fatalf("job %d delivered %v late", j.ID, late)
		}
	}
}

// later is the later of two times.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// A reservation whose TTR runs out is delivered again, not before it ran out
// and soon after.
func TestTTRRedelivery(t *testing.T) {
	b := brokertest.Fresh(t, slowTimers)
	id := push(t, b, job.Spec{Topic: "slow", Body: "x", TTR: 300 * time.Millisecond})
	first, err := popOne(b.Dispatcher, context.Background(), []string{"slow"}, time.Second)
	if err != nil || first == nil {
		t.Fatalf("first pop: %+v %v", first, err)
	}
	asked := time.Now() // Redis runs on this machine: one clock
	second, err := popOne(b.Dispatcher, context.Background(), []string{"slow"}, time.Minute)
	if err != nil || second == nil || second.ID != id {
		t.Fatalf("redelivery: %+v %v", second, err)
	}
	if second.Attempt() != 2 || second.Timeouts != 1 {
		t.Fatalf("redelivered job %+v, want attempt 2 and one timeout", second)
	}
	// Never before the TTR ran out; late counts from when it both ran out
	// and was asked for. The timers sleep a minute when idle (slowTimers):
	// the pop nudged its bucket's timer to the TTR's end, or the job would
	// come back up to a minute late. It takes under 100 ms on an idle
	// machine; 5 s is the margin for a loaded one.
	redeliveredAt := second.Due.Add(-second.TTR)
	if early := first.Due.Sub(redeliveredAt); early > 0 {
		t.Fatalf("redelivered %v before the TTR ran out", early)
	}
	if late := redeliveredAt.Sub(later(first.Due, asked)); late > 5*time.Second {
		t.Fatalf("redelivered %v after the TTR ran out, want within 5 s", late)
	}
	if err := ackOne(b.Dispatcher, context.Background(), first.PublicID(), first.Attempt()); err == nil {
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
			j, err := popOne(b.Dispatcher, context.Background(), []string{"crowd"}, time.Minute)
			if err != nil {
				t.Error(err)
			}
			results <- j
		}()
	}
	waiting(t, b, "crowd", n)
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
		case <-time.After(time.Minute):
			t.Fatalf("only %d of %d waiting consumers got a job", len(seen), n)
		}
	}
}

func TestPausedTopicWakesWaiterWhenItResumes(t *testing.T) {
	b := broker(t)
	push(t, b, job.Spec{Topic: "p", Body: "x", TTR: time.Minute})
	start := time.Now() // before the pause: it ends at least 300 ms after this
	if _, err := b.Dispatcher.Topic("p").Pause(context.Background(), dispatcher.PauseParams{For: 300 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	j, err := popOne(b.Dispatcher, context.Background(), []string{"p"}, time.Minute)
	if err != nil || j == nil {
		t.Fatalf("pop: %+v %v", j, err)
	}
	// Not before the pause ended; woken when it ended, not at the pop's
	// one-minute timeout: it takes milliseconds past 300, and 30 s is the
	// margin for a loaded machine.
	if took := time.Since(start); took < 250*time.Millisecond || took > 30*time.Second {
		t.Fatalf("got the job after %v, want when the 300ms pause ended", took)
	}
}

// A consumer waiting on two topics, woken for one but served from the other,
// passes the wake-up on so no ready job is left waiting.
func TestWakeUpHandedOn(t *testing.T) {
	b := broker(t)
	got := make(chan *job.Job, 2)
	pop := func(topics ...string) {
		// A minute: a consumer left waiting gets nothing only at its timeout.
		j, err := popOne(b.Dispatcher, context.Background(), topics, time.Minute)
		if err != nil {
			t.Error(err)
		}
		got <- j
	}
	go pop("first", "second")
	waiting(t, b, "second", 1)
	go pop("second")
	waiting(t, b, "second", 2)
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
		case <-time.After(90 * time.Second):
			t.Fatal("a ready job was left with a consumer waiting for it")
		}
	}
}

// A peek that waits is woken by a push, like a pop, and passes the wake-up
// on to a consumer waiting behind it, which gets the job.
func TestPeekReadyWaits(t *testing.T) {
	b := brokertest.Fresh(t, nil)
	ctx := context.Background()
	ops := func() int64 {
		st, err := b.Dispatcher.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return st.Batched.Ops
	}
	before := ops()
	peeked := make(chan *job.Job, 1)
	go func() {
		j, _ := peekOne(b.Dispatcher, ctx, "pw", time.Minute)
		peeked <- j
	}()
	waiting(t, b, "pw", 1) // the peek waits first
	popped := make(chan *job.Job, 1)
	go func() {
		j, _ := popOne(b.Dispatcher, ctx, []string{"pw"}, time.Minute)
		popped <- j
	}()
	waiting(t, b, "pw", 2)
	// Registered is not yet asleep: a pop looks before it registers and
	// once after (a batched operation each; a peek's are not batched), and
	// a push before the pop's second look is the pop's, not the peek's (a
	// busy CI run saw it). Wait for the pop's two looks.
	brokertest.Eventually(t, "the pop's looks", func() bool { return ops() >= before+2 })
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
		case <-time.After(90 * time.Second):
			t.Fatalf("%s was not woken by the push", w.name)
		}
	}
	if j, err := peekOne(b.Dispatcher, ctx, "pw", 100*time.Millisecond); err != nil || j != nil {
		t.Fatalf("peek of an empty topic: %+v %v", j, err)
	}
}
