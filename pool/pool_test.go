package pool

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/gmq/gmq/config"
	"github.com/gmq/gmq/internal/redistest"
	"github.com/gmq/gmq/job"
)

var redis *redistest.Server

func TestMain(m *testing.M) {
	redistest.Main(m, func(s *redistest.Server) error { redis = s; return nil })
}

// newPool returns a pool over the flushed test Redis.
func newPool(t *testing.T) (*Pool, context.Context) { return newPoolWith(t, Options{}) }

// newPoolWith is newPool with opts's batching and wait_replicas options.
func newPoolWith(t *testing.T, opts Options) (*Pool, context.Context) {
	t.Helper()
	redis.Flush(t)
	return openPool(t, rueidis.ClientOption{InitAddress: []string{redis.Addr}}, opts)
}

// openPool is a pool over a client of its own made from clientOpt (with
// client-side caching off), named "test", prefix gmq, 4 buckets unless opts
// says how many, the rest of opts filled from the defaults, and Init run.
func openPool(t *testing.T, clientOpt rueidis.ClientOption, opts Options) (*Pool, context.Context) {
	t.Helper()
	clientOpt.DisableCache = true
	client, err := rueidis.NewClient(clientOpt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	opts.Prefix, opts.Origin, opts.TickBatch = "gmq", "test", 10
	if opts.Buckets == 0 {
		opts.Buckets = 4
	}
	p := New(client, withDefaults(opts))
	ctx := redistest.Context(t)
	if err := p.Init(ctx); err != nil {
		t.Fatal(err)
	}
	return p, ctx
}

func mustPush(t *testing.T, p *Pool, ctx context.Context, j job.Spec) uint64 {
	t.Helper()
	if j.Priority == 0 {
		j.Priority = job.DefaultPriority
	}
	got, err := p.Push(ctx, j)
	if err != nil {
		t.Fatalf("push %+v: %v", j, err)
	}
	return got.ID
}

func mustPop(t *testing.T, p *Pool, ctx context.Context, topics ...string) *job.Job {
	t.Helper()
	got, err := p.Pop(ctx, topics)
	if err != nil {
		t.Fatalf("pop %v: %v", topics, err)
	}
	return got.Job
}

func TestPushPopAck(t *testing.T) {
	p, ctx := newPool(t)
	id := mustPush(t, p, ctx, job.Spec{Topic: "mail", Body: "hello", TTR: time.Minute})
	j := mustPop(t, p, ctx, "mail")
	if j == nil || j.ID != id || j.Body != "hello" || j.State != job.Reserved || j.Attempt() != 1 {
		t.Fatalf("popped %+v, want job %d reserved on attempt 1", j, id)
	}
	if left := j.TimeLeft(); left < 59*time.Second || left > time.Minute {
		t.Errorf("time left %v, want about a minute", left)
	}
	if again := mustPop(t, p, ctx, "mail"); again != nil {
		t.Fatalf("second pop got %+v, want nothing", again)
	}
	if err := p.Delete(ctx, num(id), 1); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Peek(ctx, num(id)); !errors.Is(err, job.ErrNotFound) {
		t.Fatalf("peek after ack: %v, want ErrNotFound", err)
	}
	want := job.Counters{Jobs: 1, Reserves: 1, Deletes: 1, QueueCreates: 1}
	if got, err := p.Stats(ctx); err != nil || got != want {
		t.Fatalf("stats %+v %v, want %+v", got, err, want)
	}
}

func TestTTRZeroRemovesOnPop(t *testing.T) {
	p, ctx := newPool(t)
	id := mustPush(t, p, ctx, job.Spec{Topic: "t", Body: "once", ClientID: "once-1"})
	j := mustPop(t, p, ctx, "t")
	if j == nil || j.ID != id || j.State != job.Gone || j.ClientID != "once-1" {
		t.Fatalf("popped %+v", j)
	}
	if _, err := p.Peek(ctx, num(id)); !errors.Is(err, job.ErrNotFound) {
		t.Fatalf("peek: %v, want ErrNotFound", err)
	}
	if _, err := p.Resolve(ctx, "once-1"); !errors.Is(err, job.ErrNotFound) {
		t.Fatalf("alias of a popped TTR-0 job: %v, want ErrNotFound", err)
	}
	// The id is free again.
	mustPush(t, p, ctx, job.Spec{Topic: "t", Body: "again", ClientID: "once-1"})
}

func TestPriorityThenFIFO(t *testing.T) {
	p, ctx := newPool(t)
	var want []uint64
	low1 := mustPush(t, p, ctx, job.Spec{Topic: "q", Body: "low1", Priority: 2000, TTR: time.Minute})
	high1 := mustPush(t, p, ctx, job.Spec{Topic: "q", Body: "high1", Priority: 5, TTR: time.Minute})
	low2 := mustPush(t, p, ctx, job.Spec{Topic: "q", Body: "low2", Priority: 2000, TTR: time.Minute})
	high2 := mustPush(t, p, ctx, job.Spec{Topic: "q", Body: "high2", Priority: 5, TTR: time.Minute})
	want = append(want, high1, high2, low1, low2)
	// Many equal-priority jobs keep FIFO across id widths (9 → 10 digits and beyond).
	for i := range 30 {
		want = append(want, mustPush(t, p, ctx, job.Spec{Topic: "q", Body: fmt.Sprint(i), Priority: 4000, TTR: time.Minute}))
	}
	for i, id := range want {
		j := mustPop(t, p, ctx, "q")
		if j == nil || j.ID != id {
			t.Fatalf("pop %d: got %+v, want id %d", i, j, id)
		}
	}
}

func TestTopicOrder(t *testing.T) {
	p, ctx := newPool(t)
	// Topics chosen to spread over buckets; the consumer's order decides, not priority.
	topics := []string{"a", "b", "c", "d", "e", "f"}
	for i := len(topics) - 1; i >= 0; i-- {
		mustPush(t, p, ctx, job.Spec{Topic: topics[i], Body: topics[i], Priority: uint32(10 - i), TTR: time.Minute})
	}
	for _, want := range topics {
		j := mustPop(t, p, ctx, topics...)
		if j == nil || j.Topic != want {
			t.Fatalf("got %+v, want a job of %q", j, want)
		}
	}
}

func TestFencedAck(t *testing.T) {
	p, ctx := newPool(t)
	id := mustPush(t, p, ctx, job.Spec{Topic: "f", Body: "x", TTR: 50 * time.Millisecond})
	first := mustPop(t, p, ctx, "f")
	time.Sleep(80 * time.Millisecond)
	if ready, _, err := p.Tick(ctx, p.BucketOf("f"), "f"); err != nil || ready["f"] != 1 {
		t.Fatalf("tick made %v ready %v, want the expired reservation", ready, err)
	}
	second := mustPop(t, p, ctx, "f")
	if second == nil || second.Attempt() != 2 || second.Timeouts != 1 {
		t.Fatalf("redelivery %+v, want attempt 2 with one timeout", second)
	}
	for name, op := range map[string]func() error{
		"ack":     func() error { return p.Delete(ctx, num(id), first.Attempt()) },
		"touch":   func() error { _, err := p.Touch(ctx, num(id), first.Attempt()); return err },
		"release": func() error { _, err := p.Release(ctx, num(id), first.Attempt(), 1, 0); return err },
		"bury":    func() error { _, err := p.Bury(ctx, num(id), first.Attempt(), 1); return err },
	} {
		var stale *job.StaleError
		if err := op(); !errors.As(err, &stale) || stale.Current != 2 {
			t.Errorf("%s with attempt 1: %v, want a job.StaleError naming attempt 2", name, err)
		}
	}
	if j, err := p.Peek(ctx, num(id)); err != nil || j.State != job.Reserved || j.Attempt() != 2 {
		t.Fatalf("after stale calls: %+v %v, want untouched reservation", j, err)
	}
	if err := p.Delete(ctx, num(id), 2); err != nil {
		t.Fatal(err)
	}
}

func TestTransitions(t *testing.T) {
	p, ctx := newPool(t)
	id := mustPush(t, p, ctx, job.Spec{Topic: "tr", Body: "b", TTR: time.Minute})
	steps := []struct {
		name string
		do   func() error
		want job.State
	}{
		{"release delayed", func() error {
			mustPop(t, p, ctx, "tr")
			_, err := p.Release(ctx, num(id), 0, 7, time.Hour)
			return err
		}, job.Delayed},
		{"kick delayed", func() error { _, err := p.KickJob(ctx, num(id)); return err }, job.Ready},
		{"reserve and bury", func() error { mustPop(t, p, ctx, "tr"); _, err := p.Bury(ctx, num(id), 0, 9); return err }, job.Buried},
		{"kick buried", func() error { _, err := p.KickJob(ctx, num(id)); return err }, job.Ready},
		{"reserve and release", func() error {
			mustPop(t, p, ctx, "tr")
			_, err := p.Release(ctx, num(id), 3, 3, 0)
			return err
		}, job.Ready},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		j, err := p.Peek(ctx, num(id))
		if err != nil || j.State != s.want {
			t.Fatalf("%s: job %+v %v, want %s", s.name, j, err, s.want)
		}
	}
	j, _ := p.Peek(ctx, num(id))
	if j.Reserves != 3 || j.Releases != 2 || j.Buries != 1 || j.Kicks != 2 || j.Priority != 3 {
		t.Fatalf("counters %+v", j)
	}
	// Wrong-state operations are refused and change nothing.
	if _, err := p.Bury(ctx, num(id), 0, 1); !errors.Is(err, job.ErrNotReserved) {
		t.Errorf("bury a ready job: %v", err)
	}
	if _, err := p.Touch(ctx, num(id), 0); !errors.Is(err, job.ErrNotReserved) {
		t.Errorf("touch a ready job: %v", err)
	}
	if _, err := p.KickJob(ctx, num(id)); !errors.Is(err, job.ErrNotReserved) {
		t.Errorf("kick a ready job: %v", err)
	}
	c, _ := p.Stats(ctx)
	if c.Ready != 1 || c.Reserved != 0 || c.Delayed != 0 || c.Buried != 0 {
		t.Fatalf("current counts %+v, want one ready", c)
	}
	if err := p.Delete(ctx, num(id), 0); err != nil {
		t.Fatal(err)
	}
	if err := p.Delete(ctx, num(id), 0); !errors.Is(err, job.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
}

func TestTouchExtends(t *testing.T) {
	p, ctx := newPool(t)
	id := mustPush(t, p, ctx, job.Spec{Topic: "t", Body: "b", TTR: 300 * time.Millisecond})
	first := mustPop(t, p, ctx, "t")
	time.Sleep(150 * time.Millisecond)
	touched, err := p.Touch(ctx, num(id), first.Attempt())
	if err != nil {
		t.Fatal(err)
	}
	deadline := touched.Due
	if !deadline.After(first.Due.Add(100 * time.Millisecond)) {
		t.Fatalf("touch deadline %v not later than the first %v", deadline, first.Due)
	}
}

func TestKickBuriedBeforeDelayed(t *testing.T) {
	p, ctx := newPool(t)
	delayed := mustPush(t, p, ctx, job.Spec{Topic: "k", Body: "d", Delay: time.Hour, TTR: time.Minute})
	var buried []uint64
	for range 25 {
		id := mustPush(t, p, ctx, job.Spec{Topic: "k", Body: "b", TTR: time.Minute})
		mustPop(t, p, ctx, "k")
		if _, err := p.Bury(ctx, num(id), 0, 1); err != nil {
			t.Fatal(err)
		}
		buried = append(buried, id)
	}
	if j, err := p.PeekTopic(ctx, "k", job.Buried); err != nil || j.ID != buried[0] {
		t.Fatalf("peek buried: %+v %v, want the oldest", j, err)
	}
	n, err := p.Kick(ctx, "k", 100) // more than one batch of 10, fewer than asked
	if err != nil || n != 25 {
		t.Fatalf("kick: %d %v, want all 25 buried and no delayed", n, err)
	}
	if j, _ := p.Peek(ctx, num(delayed)); j.State != job.Delayed {
		t.Fatalf("delayed job kicked with buried ones")
	}
	if n, err := p.Kick(ctx, "k", 5); err != nil || n != 1 {
		t.Fatalf("second kick: %d %v, want the delayed job", n, err)
	}
}

func TestDelayedTick(t *testing.T) {
	p, ctx := newPool(t)
	// The pop, the look and the tick before the due time must come within
	// the delay: a second is the margin for a loaded machine (they take
	// milliseconds).
	id := mustPush(t, p, ctx, job.Spec{Topic: "d", Body: "later", Delay: time.Second, TTR: time.Minute})
	if j := mustPop(t, p, ctx, "d"); j != nil {
		t.Fatalf("delayed job popped early: %+v", j)
	}
	topics, wait, err := p.DueTopics(ctx, p.BucketOf("d"), 10)
	if err != nil || len(topics) != 0 || wait <= 0 || wait > time.Second {
		t.Fatalf("due topics %v wait %v %v", topics, wait, err)
	}
	if ready, _, _ := p.Tick(ctx, p.BucketOf("d"), "d"); ready["d"] != 0 {
		t.Fatalf("tick before due made %v ready", ready)
	}
	time.Sleep(wait)
	topics, _, err = p.DueTopics(ctx, p.BucketOf("d"), 10)
	if err != nil || len(topics) != 1 || topics[0] != "d" {
		t.Fatalf("due topics after wait: %v %v", topics, err)
	}
	if ready, more, err := p.Tick(ctx, p.BucketOf("d"), "d"); err != nil || ready["d"] != 1 || more {
		t.Fatalf("tick: %v %v %v", ready, more, err)
	}
	if j := mustPop(t, p, ctx, "d"); j == nil || j.ID != id {
		t.Fatalf("pop after tick: %+v", j)
	}
}

func TestPause(t *testing.T) {
	p, ctx := newPool(t)
	if _, err := p.Pause(ctx, "nope", PauseParams{For: time.Second}); !errors.Is(err, job.ErrNotFound) {
		t.Fatalf("pause unknown topic: %v", err)
	}
	mustPush(t, p, ctx, job.Spec{Topic: "p", Body: "x", TTR: time.Minute})
	// The pop and the stats must come while it is paused: a second is the
	// margin for a loaded machine (they take milliseconds).
	if _, err := p.Pause(ctx, "p", PauseParams{For: time.Second}); err != nil {
		t.Fatal(err)
	}
	got, err := p.Pop(ctx, []string{"p"})
	if err != nil || got.Job != nil || got.PauseWait <= 0 || got.PauseWait > time.Second {
		t.Fatalf("pop of paused topic: %+v %v", got, err)
	}
	s, _ := p.TopicStats(ctx, "p")
	if !s.Paused() || s.Ready != 1 {
		t.Fatalf("stats %+v", s)
	}
	time.Sleep(got.PauseWait + 5*time.Millisecond)
	if j := mustPop(t, p, ctx, "p"); j == nil {
		t.Fatal("pop after pause ended got nothing")
	}
}

func TestTopicsAndForget(t *testing.T) {
	p, ctx := newPool(t)
	id := mustPush(t, p, ctx, job.Spec{Topic: "x", Body: "x", TTR: time.Minute})
	mustPush(t, p, ctx, job.Spec{Topic: "y", Body: "y", TTR: time.Minute})
	names, err := p.Topics(ctx)
	if err != nil || fmt.Sprint(names) != "[x y]" {
		t.Fatalf("topics %v %v", names, err)
	}
	if gone, _ := p.ForgetTopic(ctx, "x"); gone {
		t.Fatal("forgot a topic that holds a job")
	}
	if err := p.Delete(ctx, num(id), 0); err != nil {
		t.Fatal(err)
	}
	if gone, _ := p.ForgetTopic(ctx, "x"); !gone {
		t.Fatal("kept an empty topic")
	}
	if _, err := p.TopicStats(ctx, "x"); !errors.Is(err, job.ErrNotFound) {
		t.Fatalf("stats of forgotten topic: %v", err)
	}
}

func TestBucketCountChecked(t *testing.T) {
	p, ctx := newPool(t)
	other := New(p.client, withDefaults(Options{Prefix: "gmq", Buckets: 8}))
	if err := other.Init(ctx); !errors.Is(err, job.ErrInvalid) {
		t.Fatalf("init with another bucket count: %v", err)
	}
}

func TestUnavailable(t *testing.T) {
	srv := redistest.Start(t)
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	p := New(client, withDefaults(Options{Prefix: "gmq", Buckets: 4, Origin: "t"}))
	ctx := context.Background()
	if err := p.Init(ctx); err != nil {
		t.Fatal(err)
	}
	srv.Kill()
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := p.Push(cctx, job.Spec{Topic: "u", Body: "x"}); !errors.Is(err, job.ErrUnavailable) {
		t.Fatalf("push with Redis down: %v, want ErrUnavailable", err)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute) // only a pool that never recovers waits it out
	for {
		_, err := p.Push(ctx, job.Spec{Topic: "u", Body: "x"})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no recovery after Redis came back: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestCheckFindsNothingAfterEveryTransition(t *testing.T) {
	p, ctx := newPool(t)
	id := mustPush(t, p, ctx, job.Spec{Topic: "c", Body: "x", TTR: time.Minute})
	mustPush(t, p, ctx, job.Spec{Topic: "c", Body: "y", Delay: time.Hour, TTR: time.Minute})
	mustPop(t, p, ctx, "c")
	if _, err := p.Bury(ctx, num(id), 0, 1); err != nil {
		t.Fatal(err)
	}
	if problems, err := p.Check(ctx); err != nil || len(problems) != 0 {
		t.Fatalf("check: %v %v", problems, err)
	}
	// Now break it: a job in two sets.
	k := p.keys.withTopics(p.keys.bucketOf("c"), "c")
	if err := p.client.Do(ctx, p.client.B().Zadd().Key(k[len(p.keys.bucket(0))]).ScoreMember().ScoreMember(1, member(id)).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if problems, _ := p.Check(ctx); len(problems) == 0 {
		t.Fatal("check missed a job in two sets")
	}
}

// Scripts run with EVALSHA; after Redis forgets them (a restart without
// persistence of the script cache, SCRIPT FLUSH) they are sent again.
func TestScriptsSurviveScriptFlush(t *testing.T) {
	p, ctx := newPool(t)
	mustPush(t, p, ctx, job.Spec{Topic: "s", Body: "x", TTR: time.Minute})
	if reply, err := redis.Do("SCRIPT", "FLUSH"); err != nil || reply != "+OK" {
		t.Fatalf("SCRIPT FLUSH: %q %v", reply, err)
	}
	if j := mustPop(t, p, ctx, "s"); j == nil {
		t.Fatal("pop after SCRIPT FLUSH got nothing")
	}
}

// num is job n's public id.
func num(n uint64) string { return strconv.FormatUint(n, 10) }

// withDefaults fills the options opts leaves at zero from config.Default,
// where every default lives.
func withDefaults(opts Options) Options {
	cfg := config.Default()
	set := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	set(&opts.TickBatch, cfg.TickBatch)
	set(&opts.TopicCache, cfg.TopicCache)
	set(&opts.MaxOpsPerCall, cfg.MaxOpsPerCall)
	set(&opts.BatchSlots, cfg.BatchSlots)
	if opts.AliasGrace == 0 {
		opts.AliasGrace = cfg.AliasGrace
	}
	return opts
}
