package pool

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/gmq/gmq/job"
	"github.com/gmq/gmq/lua"
)

// The plain path answers and writes as batch.lua does for the same
// operations. Two pools on one Redis, under prefixes of their own, run the
// same random operations (TestShortPathAgreesWithGeneral's), one a call:
// the first's plain pushes, pops and acks take the plain path; the
// second's carry a peek of an empty topic too, so they go batch.lua's
// general way. Pushes are of every kind push_plain takes (bodies of 0, 5,
// 100 and 5,000 bytes, delayed or not, a member taken now and then), into
// topics registered, emptied and new; pops of one topic, first or best;
// acks and deletes of jobs reserved, held by another delivery, ready,
// delayed or gone, and the other operations between them, alike on both.
// After each call the replies agree and every key of the two stores does,
// and at the end so do the totals each broker adds up (times aside).
func TestPlainPathAgreesWithBatch(t *testing.T) {
	for seed := range uint64(3) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			redis.Flush(t)
			plain, ctx := prefixedPool(t, "p")
			general, _ := prefixedPool(t, "g")
			b := plain.keys.bucketOf("a")
			topics := sameBucket(plain, b, 4) // three for jobs, the last left empty
			rng := rand.New(rand.NewPCG(seed, 50))
			var members, held []string // held: the jobs reserved now, which an ack is most often of
			tried := map[string]int{}
			for call := range 150 {
				o := randomOp(rng, topics[:3], &members)
				if o.kind == opDelete && len(held) > 0 && rng.IntN(3) > 0 {
					o.args = lua.OpArgs(opDelete, "member", held[rng.IntN(len(held))], "attempt", strconv.Itoa(rng.IntN(2)),
						"mode", []string{deleteAck, deleteAny}[rng.IntN(2)], "result", "")
				}
				if o.kind == opAckPop && rng.IntN(3) > 0 { // one topic to pop, as a worker's loop
					o.topics = o.topics[:2]
					if len(held) > 0 {
						o.args = lua.OpArgs(opAckPop, "member", held[rng.IntN(len(held))], "attempt", strconv.Itoa(rng.IntN(2)),
							"more", []string{"0", "1"}[rng.IntN(2)], "result", "")
					}
				}
				viaBatch := append(cloneOps([]*op{o}), peekOp(topics[3]))
				o.plain = plainOf(o)
				if o.plain != nil {
					tried[o.plain.script.script]++
				}
				got, want := runOps(ctx, plain, b, []*op{o}), runOps(ctx, general, b, viaBatch)
				if g, w := normalReply(t, got[0]), normalReply(t, want[0]); g != w {
					t.Fatalf("call %d (%s %v): plain %s, batch %s", call, o.kind, o.args, g, w)
				}
				if g, w := storeDump(t, ctx, plain, "p"), storeDump(t, ctx, general, "g"); g != w {
					t.Fatalf("after call %d (%s %v) the stores differ:\nplain path:\n%s\nbatch:\n%s", call, o.kind, o.args, g, w)
				}
				dueNeverLate(t, ctx, plain, b, topics[:3])
				held = reservedOf(t, ctx, plain, b, topics[:3])
			}
			for _, script := range []string{"push_plain", "pop_plain", "ack_plain", "ack_pop_plain"} {
				if tried[script] == 0 {
					t.Errorf("no call of %s", script)
				}
			}
			if !plain.batchers[b].plain.open(time.Now()) {
				t.Fatal("the bucket answered that it has settings: the calls did not take the plain path")
			}
			for _, p := range []*Pool{plain, general} {
				if err := p.FlushTotals(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if g, w := storeDump(t, ctx, plain, "p"), storeDump(t, ctx, general, "g"); g != w {
				t.Fatalf("the stores differ:\nplain path:\n%s\nbatch:\n%s", g, w)
			}
		})
	}
}

// dueNeverLate fails t unless bucket b's due hint of each of topics is no
// later than its earliest delayed or reserved job's time: the bucket's
// timer must look at the topic by then (the due key "may be early, never
// late"). The store dump leaves times out, so it cannot tell.
func dueNeverLate(t *testing.T, ctx context.Context, p *Pool, b int, topics []string) {
	t.Helper()
	for _, topic := range topics {
		keys := p.keys.withTopics(b, topic)
		earliest := -1.0
		for _, set := range []string{"delayed", "reserved"} {
			z, err := p.client.Do(ctx, p.client.B().Zrange().Key(keys[bucketKeyCount+lua.SlotIndex(lua.TopicKeys, set)]).
				Min("0").Max("0").Withscores().Build()).AsZScores()
			if err != nil {
				t.Fatal(err)
			}
			if len(z) > 0 && (earliest < 0 || z[0].Score < earliest) {
				earliest = z[0].Score
			}
		}
		if earliest < 0 {
			continue
		}
		due, err := p.client.Do(ctx, p.client.B().Zscore().Key(keys[lua.SlotIndex(lua.BucketKeys, "due")]).Member(topic).Build()).AsFloat64()
		if err != nil || due > earliest {
			t.Fatalf("topic %s: due hint %v (%v), its earliest delayed or reserved job at %v", topic, due, err, earliest)
		}
	}
}

// reservedOf lists the members reserved in topics of bucket b.
func reservedOf(t *testing.T, ctx context.Context, p *Pool, b int, topics []string) []string {
	t.Helper()
	var out []string
	for _, topic := range topics {
		key := p.keys.withTopics(b, topic)[bucketKeyCount+lua.SlotIndex(lua.TopicKeys, "reserved")]
		m, err := p.client.Do(ctx, p.client.B().Zrange().Key(key).Min("0").Max("-1").Build()).AsStrSlice()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m...)
	}
	return out
}

// plainOf is the plain call the pool gives operation o (randomOp's), or nil.
func plainOf(o *op) *plainCall {
	arg := func(name string) string { return o.args[lua.OpArgIndex(o.kind, name)] }
	switch o.kind {
	case opPush:
		return plainPush(o.topics, o.args, "", "")
	case opPop:
		return plainPop(arg("mode"), o.topics, arg("more"))
	case opDelete:
		attempt, _ := strconv.Atoi(arg("attempt"))
		return plainAck(o.topics[0], arg("member"), attempt, arg("mode"), arg("result"))
	case opAckPop:
		attempt, _ := strconv.Atoi(arg("attempt"))
		return plainAckPop(o.topics[0], arg("member"), attempt, arg("result"), o.topics[1:], arg("more"))
	}
	return nil
}

// plainPush takes every push the plain path does (push_plain's arguments
// read by name from the batch push's), and none it does not.
func TestPlainPushArgs(t *testing.T) {
	push := func(change ...string) []string {
		named := []string{"member", "m1", "priority", "7", "ttr", "60000", "delay", "1000", "body", "b",
			"client_id", "c", "expires", "0", "retry", "r", "trace", "00-1-2-01", "unique_key", "", "unique_mode", "",
			"unique_for", "", "group", "", "schedule_key", "", "schedule_due", "", "schedule_next", "", "schedule_name", "",
			"overlap", "", "json", "1", "keep", "90", "timeout", "5000", "then_list", "", "dead_list", "", "after", "", "batch", ""}
		for i := 0; i+1 < len(change); i += 2 {
			named[slices.Index(named, change[i])+1] = change[i+1]
		}
		return lua.OpArgs(opPush, named...)
	}
	got := plainPush([]string{"t"}, push(), "", "")
	if got == nil {
		t.Fatal("a plain push was not taken")
	}
	want := []string{"topic", "t", "member", "m1", "priority", "7", "ttr", "60000", "delay", "1000", "body", "b",
		"client_id", "c", "retry", "r", "trace", "00-1-2-01", "json", "1", "keep", "90", "timeout", "5000"}
	if !slices.Equal(got.named(), want) {
		t.Errorf("push_plain's arguments %q, want %q", got.named(), want)
	}
	for _, c := range []struct {
		name                   string
		topics, args           []string
		uniqueKey, scheduleKey string
	}{
		{"fanout children", []string{"t", "t+a"}, push(), "", ""},
		{"a unique key", []string{"t"}, push(), "k", ""},
		{"a schedule's fire", []string{"t"}, push(), "", "s"},
		{"an expiry", []string{"t"}, push("expires", "123"), "", ""},
		{"then", []string{"t"}, push("then_list", "x"), "", ""},
		{"on_dead", []string{"t"}, push("dead_list", "x"), "", ""},
		{"after", []string{"t"}, push("after", "x"), "", ""},
		{"a group", []string{"t"}, push("group", "g"), "", ""},
		{"a batch", []string{"t"}, push("batch", "9"), "", ""},
		{"a fanout child's topic", []string{"t+a"}, push(), "", ""},
	} {
		if got := plainPush(c.topics, c.args, c.uniqueKey, c.scheduleKey); got != nil {
			t.Errorf("a push with %s took the plain path: %v", c.name, got.named())
		}
	}
}

// The plain path's gates. A bucket whose defaults hash exists (a setting
// anywhere in it) answers a plain call GENERAL, writing nothing; the call
// goes through batch.lua and does its work once, and the bucket's calls go
// there for plainRetry, with no more calls for nothing. A paused topic's
// pop does the same for that topic alone. A bucket without settings takes
// the plain path: a push, a pop and an ack one library call each.
func TestPlainPathGate(t *testing.T) {
	p, ctx := newPool(t)
	plainBucket := p.keys.bucketOf("t")
	paused := sameBucket(p, plainBucket, 2)[1] // beside t
	configured := sameBucket(p, (plainBucket+1)%p.opts.Buckets, 2)
	if err := p.SetTopicConfig(ctx, configured[0], job.TopicConfig{"max_items": "100"}); err != nil {
		t.Fatal(err)
	}
	mustPush(t, p, ctx, job.Spec{Topic: paused, Body: "x", TTR: time.Minute})
	if _, err := p.Pause(ctx, paused, PauseParams{For: time.Hour}); err != nil {
		t.Fatal(err)
	}
	calls := func(do func()) int64 { // the library's function calls do makes (the id block's script aside)
		t.Helper()
		if err := p.client.Do(ctx, p.client.B().ConfigResetstat().Build()).Error(); err != nil {
			t.Fatal(err)
		}
		do()
		return commandStats(t, p, ctx)["fcall"][0]
	}
	life := func(topic string) (push, pop, ack int64) {
		t.Helper()
		var id uint64
		push = calls(func() { id = mustPush(t, p, ctx, job.Spec{Topic: topic, Body: "x", TTR: time.Minute}) })
		var got Popped
		pop = calls(func() {
			var err error
			if got, err = p.Pop(ctx, []string{topic}); err != nil || got.Job == nil || got.Job.ID != id {
				t.Fatalf("pop of %s: %+v %v, want job %d", topic, got.Job, err, id)
			}
		})
		ack = calls(func() {
			if err := p.Ack(ctx, strconv.FormatUint(id, 10), got.Job.Attempt(), ""); err != nil {
				t.Fatal(err)
			}
		})
		return push, pop, ack
	}
	for i, c := range []struct {
		topic          string
		push, pop, ack int64 // function calls each made
	}{
		{"t", 1, 1, 1},           // plain
		{configured[1], 2, 1, 1}, // GENERAL, then batch.lua; the gate shut for the pop and ack
		{configured[1], 1, 1, 1}, // batch.lua at once
		{configured[0], 1, 1, 1}, // the topic with the setting
		{"t", 1, 1, 1},           // another bucket's gate is its own
	} {
		if push, pop, ack := life(c.topic); push != c.push || pop != c.pop || ack != c.ack {
			t.Errorf("life %d on %s: %d, %d, %d function calls (push, pop, ack), want %d, %d, %d",
				i, c.topic, push, pop, ack, c.push, c.pop, c.ack)
		}
	}
	// A job of TTR 0 is taken by the plain pop (deleted as it is delivered), one call.
	taken := mustPush(t, p, ctx, job.Spec{Topic: "t", Body: "once"})
	if n := calls(func() {
		got, err := p.Pop(ctx, []string{"t"})
		if err != nil || got.Job == nil || got.Job.ID != taken || got.Job.State != job.Gone {
			t.Fatalf("pop of a TTR 0 job: %+v %v", got.Job, err)
		}
	}); n != 1 {
		t.Errorf("a pop of a TTR 0 job: %d function calls, want 1", n)
	}
	// A worker's loop: an ack then the next job, one call.
	next := mustPush(t, p, ctx, job.Spec{Topic: "t", Body: "next", TTR: time.Minute})
	first, err := p.Pop(ctx, []string{"t"})
	if err != nil || first.Job == nil {
		t.Fatalf("pop: %+v %v", first, err)
	}
	mustPush(t, p, ctx, job.Spec{Topic: "t", Body: "after", TTR: time.Minute})
	if n := calls(func() {
		got, err := p.AckAndPop(ctx, strconv.FormatUint(first.Job.ID, 10), first.Job.Attempt(), "", []string{"t"})
		if err != nil || got.Job == nil || got.Job.ID == next || got.Job.Body != "after" {
			t.Fatalf("ack and pop: %+v %v", got.Job, err)
		}
	}); n != 1 {
		t.Errorf("an ack then a pop: %d function calls, want 1", n)
	}
	if p.batchers[plainBucket].plain.open(time.Now()) != true || p.batchers[(plainBucket+1)%p.opts.Buckets].plain.open(time.Now()) {
		t.Error("the gates: the plain bucket's should be open, the configured one's shut")
	}
	for i, want := range []int64{2, 1} { // GENERAL topic, then batch.lua (EMPTY: paused); then batch.lua at once
		var got Popped
		n := calls(func() {
			var err error
			if got, err = p.Pop(ctx, []string{paused}); err != nil || got.Job != nil || got.PauseWait <= 0 {
				t.Fatalf("pop of the paused topic: %+v %v", got, err)
			}
		})
		if n != want {
			t.Errorf("pop %d of the paused topic: %d function calls, want %d", i, n, want)
		}
	}
	if !p.batchers[plainBucket].plain.open(time.Now()) || p.plainTopics.open(paused, time.Now()) {
		t.Error("a paused topic shuts its own gate, not its bucket's")
	}
}

// A plain push of a ready job tells the brokers whose consumers wait on its
// topic as batch.lua's does: "origin 1 topic" on the channel the topic's
// waiting key names; a delayed one tells no one.
func TestPlainPushWakesWaitingBrokers(t *testing.T) {
	p, ctx := newPool(t)
	b := p.keys.bucketOf("t")
	waiting := p.keys.withTopics(b, "t")[bucketKeyCount+lua.SlotIndex(lua.TopicKeys, "waiting")]
	if err := p.client.Do(ctx, p.client.B().Set().Key(waiting).Value("gmq-test-wake").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	sub, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{redis.Addr}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	heard := make(chan string, 10)
	subscribed := make(chan struct{})
	subCtx, stop := context.WithCancel(ctx)
	defer stop()
	go sub.Receive(subCtx, sub.B().Subscribe().Channel("gmq-test-wake").Build(), func(m rueidis.PubSubMessage) { heard <- m.Message })
	go func() { // SUBSCRIBE has no answer Receive hands back: publish until heard
		defer close(subscribed)
		for subCtx.Err() == nil {
			if n, _ := p.client.Do(ctx, p.client.B().PubsubNumsub().Channel("gmq-test-wake").Build()).AsIntMap(); n["gmq-test-wake"] > 0 {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	<-subscribed
	mustPush(t, p, ctx, job.Spec{Topic: "t", Body: "later", TTR: time.Minute, Delay: time.Hour})
	mustPush(t, p, ctx, job.Spec{Topic: "t", Body: "now", TTR: time.Minute})
	if !p.batchers[b].plain.open(time.Now()) {
		t.Fatal("the pushes did not take the plain path")
	}
	select {
	case got := <-heard:
		if want := p.opts.Origin + " 1 t"; got != want {
			t.Errorf("heard %q, want %q (the ready push's, not the delayed one's)", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no wake-up heard")
	}
}

// A plain pop nudges its bucket's timer to the reserved job's deadline, and
// a plain delayed push to its due time, as batch.lua's do: the timer must
// look at the topic then (TestPlainPathAgreesWithBatch's stores leave
// times out, and its topics mostly have an earlier hint already).
func TestPlainCallsNudgeTheTimer(t *testing.T) {
	p, ctx := newPool(t)
	b := p.keys.bucketOf("t")
	keys := p.keys.withTopics(b, "t")
	due := keys[lua.SlotIndex(lua.BucketKeys, "due")]
	score := func(key, member string) float64 {
		t.Helper()
		v, err := p.client.Do(ctx, p.client.B().Zscore().Key(key).Member(member).Build()).AsFloat64()
		if err != nil {
			t.Fatalf("zscore %s %s: %v", key, member, err)
		}
		return v
	}
	mustPush(t, p, ctx, job.Spec{Topic: "t", Body: "x", TTR: time.Minute})
	if n, _ := p.client.Do(ctx, p.client.B().Zcard().Key(due).Build()).AsInt64(); n != 0 {
		t.Fatalf("a ready push left %d due hints", n)
	}
	got, err := p.Pop(ctx, []string{"t"})
	if err != nil || got.Job == nil {
		t.Fatalf("pop: %+v %v", got, err)
	}
	reserved := keys[bucketKeyCount+lua.SlotIndex(lua.TopicKeys, "reserved")]
	if d, r := score(due, "t"), score(reserved, member(got.Job.ID)); d != r {
		t.Errorf("after the pop the due hint is %v, the job's deadline %v", d, r)
	}
	if err := p.client.Do(ctx, p.client.B().Del().Key(due).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	id := mustPush(t, p, ctx, job.Spec{Topic: "t", Body: "y", TTR: time.Minute, Delay: time.Hour})
	delayed := keys[bucketKeyCount+lua.SlotIndex(lua.TopicKeys, "delayed")]
	if d, r := score(due, "t"), score(delayed, member(id)); d != r {
		t.Errorf("after the delayed push the due hint is %v, the job's due time %v", d, r)
	}
	if !p.batchers[b].plain.open(time.Now()) {
		t.Fatal("the calls did not take the plain path")
	}
}

// The gates open again plainRetry after they shut, each for its own: a
// bucket's, and a topic's among many (past plainTopicsMost remembered, all
// are forgotten, each to pay one call for nothing again). Times are given,
// so no test waits the 10 s.
func TestPlainGatesReopen(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	var g plainGate
	for _, c := range []struct {
		at   time.Duration
		shut bool // shut it at this time, before looking
		want bool
	}{
		{0, false, true}, {0, true, false}, {plainRetry - time.Millisecond, false, false},
		{plainRetry, false, true}, {plainRetry, true, false}, {2*plainRetry - 1, false, false}, {2 * plainRetry, false, true},
	} {
		if c.shut {
			g.shut(t0.Add(c.at))
		}
		if got := g.open(t0.Add(c.at)); got != c.want {
			t.Errorf("bucket gate at %v (shut then: %v): open %v, want %v", c.at, c.shut, got, c.want)
		}
	}
	var topics plainTopics
	topics.shut("a", t0)
	if topics.open("a", t0.Add(plainRetry-1)) || !topics.open("b", t0) || !topics.open("a", t0.Add(plainRetry)) {
		t.Error("a topic's gate: shut for plainRetry, its own, then open")
	}
	for i := range plainTopicsMost {
		topics.shut(strconv.Itoa(i), t0)
	}
	topics.shut("last", t0)
	if !topics.open("0", t0) || topics.open("last", t0) || len(topics.until) != 1 {
		t.Errorf("past %d topics remembered: the others forgotten (%d left), the last one kept", plainTopicsMost, len(topics.until))
	}
}
