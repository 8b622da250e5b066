package pool

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/gmq/gmq/job"
	"github.com/gmq/gmq/lua"
)

// rueidisOpt is a client option for the test Redis, for a second pool (another broker).
func rueidisOpt() rueidis.ClientOption {
	return rueidis.ClientOption{InitAddress: []string{redis.Addr}}
}

// TestPlainPathAgreesAcrossFormats is TestPlainPathAgreesWithBatch over what it
// does not generate: store formats 1, 2, 3 and 6 (both pools told the
// format as Announce tells it), bodies of 0, 1, 4096 and 4097 bytes,
// priorities 0 and 2^32-1, TTR 0 and 1 ms, delays of 1 ms then a tick,
// keep of none, 0, -1 and 600, and between the calls operations of another
// kind made alike on both stores through the pool's API (a pause and an
// unpause, a cancel, a wait for a job's end, a topic forgotten, a tick, a
// release, a bury and a kick). The plain pool's gates are opened before
// every call, so each plain call tries the plain path.
func TestPlainPathAgreesAcrossFormats(t *testing.T) {
	for _, format := range []int{1, 2, 3, 6} {
		for seed := range uint64(1) {
			t.Run(fmt.Sprintf("format %d seed %d", format, seed), func(t *testing.T) {
				redis.Flush(t)
				plain, ctx := prefixedPool(t, "p")
				general, _ := prefixedPool(t, "g")
				caller := "test"
				if format > 1 {
					caller += "/" + strconv.Itoa(format)
				}
				for _, p := range []*Pool{plain, general} {
					c := caller
					p.callerArg.Store(&c)
					p.format.Store(int64(format))
				}
				b := plain.keys.bucketOf("a")
				topics := sameBucket(plain, b, 4)
				rng := rand.New(rand.NewPCG(seed, 51))
				var ids []uint64
				tried := map[string]int{}
				for call := range 150 {
					if rng.IntN(4) == 0 {
						side := sideOpOf(rng, topics[:3], ids, b)
						g, w := side(ctx, plain), side(ctx, general)
						if g != w {
							t.Fatalf("call %d: side op: plain pool %s, general %s", call, g, w)
						}
						if gd, wd := mixedDump(t, ctx, plain, "p"), mixedDump(t, ctx, general, "g"); gd != wd {
							t.Fatalf("after side op %d (%s) the stores differ:\n%s", call, g, lineDiff(gd, wd))
						}
					}
					o := mixedOp(rng, topics[:3], &ids, b, reservedOf(t, ctx, plain, b, topics[:3]))
					viaBatch := append(cloneOps([]*op{o}), peekOp(topics[3]))
					o.plain = plainOf(o)
					if o.plain != nil {
						tried[o.plain.script.script]++
					}
					plain.batchers[b].plain.until.Store(0)
					plain.plainTopics = plainTopics{}
					got, want := runOps(ctx, plain, b, []*op{o}), runOps(ctx, general, b, viaBatch)
					if g, w := mixedNorm(normalReply(t, got[0]), "p"), mixedNorm(normalReply(t, want[0]), "g"); g != w {
						t.Fatalf("call %d (%s %v): plain %s, batch %s", call, o.kind, short(fmt.Sprint(o.args)), g, w)
					}
					if g, w := mixedDump(t, ctx, plain, "p"), mixedDump(t, ctx, general, "g"); g != w {
						t.Fatalf("after call %d (%s %v) the stores differ:\n%s", call, o.kind, short(fmt.Sprint(o.args)), lineDiff(g, w))
					}
				}
				for _, script := range []string{"push_plain", "pop_plain", "ack_plain", "ack_pop_plain"} {
					if tried[script] == 0 {
						t.Errorf("no call of %s", script)
					}
				}
				for _, p := range []*Pool{plain, general} {
					if err := p.FlushTotals(ctx); err != nil {
						t.Fatal(err)
					}
				}
				if g, w := mixedDump(t, ctx, plain, "p"), mixedDump(t, ctx, general, "g"); g != w {
					t.Fatalf("the stores differ:\nplain path:\n%s\nbatch:\n%s", g, w)
				}
			})
		}
	}
}

var pausedUntil = regexp.MustCompile(`paused_until=\d+`)

var errorTime = regexp.MustCompile(`,\d{13},`)

var emptyWait = regexp.MustCompile(`EMPTY \| \d{4,} \|`)

// lineDiff lists the lines of the plain store's dump and the batch one's
// that differ, each long one cut.
func lineDiff(plain, batch string) string {
	var out []string
	p, b := strings.Split(plain, "\n"), strings.Split(batch, "\n")
	for i := 0; i < max(len(p), len(b)); i++ {
		var x, y string
		if i < len(p) {
			x = p[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			out = append(out, "plain: "+cutLine(x, y), "batch: "+cutLine(y, x))
		}
	}
	return strings.Join(out, "\n")
}

// cutLine is a, from a little before where it first differs from b, at most 600 bytes.
func cutLine(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	from := max(0, i-200)
	head := a[:min(len(a), 40)]
	a = a[from:]
	if len(a) > 600 {
		a = a[:600]
	}
	return head + " ...@" + strconv.Itoa(from) + ": " + a
}

// mixedDump is storeDump with a pause's end (a time) left out.
func mixedDump(t *testing.T, ctx context.Context, p *Pool, prefix string) string {
	return mixedNorm(storeDump(t, ctx, p, prefix), prefix)
}

// mixedNorm leaves out of a dump or reply what differs between the two
// stores for no fault: times, and the prefix in a waited job's channel.
func mixedNorm(s, prefix string) string {
	s = pausedUntil.ReplaceAllString(s, "paused_until=T")
	s = emptyWait.ReplaceAllString(s, "EMPTY | W |")
	s = strings.ReplaceAll(s, `"`+prefix+`:wake"`, `"X:wake"`)
	return errorTime.ReplaceAllString(s, ",T,")
}

// mixedOp is a push, pop, ack, delete or ack then pop of bucket b's
// jobs, mostly plain ones.
func mixedOp(rng *rand.Rand, topics []string, ids *[]uint64, b int, held []string) *op {
	topic := topics[rng.IntN(len(topics))]
	pick := func() string {
		if len(held) > 0 && rng.IntN(3) > 0 {
			return held[rng.IntN(len(held))]
		}
		if len(*ids) == 0 || rng.IntN(10) == 0 {
			return member(uint64(900000*4 + b))
		}
		return member((*ids)[rng.IntN(len(*ids))])
	}
	switch r := rng.IntN(10); {
	case r < 4:
		n := uint64((len(*ids)+1)*4 + b)
		if len(*ids) > 0 && rng.IntN(20) == 0 {
			n = (*ids)[rng.IntN(len(*ids))]
		}
		*ids = append(*ids, n)
		body := strings.Repeat("b", []int{0, 1, 4096, 4097}[rng.IntN(4)])
		return &op{kind: opPush, topics: []string{topic}, args: lua.OpArgs(opPush, "member", member(n),
			"priority", []string{"0", "1", "4294967295"}[rng.IntN(3)], "ttr", []string{"0", "1", "60000"}[rng.IntN(3)],
			"delay", []string{"0", "0", "1", "60000"}[rng.IntN(4)], "body", body, "client_id", []string{"", "cid-" + strconv.FormatUint(n, 10)}[rng.IntN(2)],
			"expires", []string{"0", "0", "0", "0", "0", "0", "0", strconv.FormatInt(time.Now().Add(time.Hour).UnixMilli(), 10)}[rng.IntN(8)], "retry", "", "trace", []string{"", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}[rng.IntN(2)],
			"unique_key", "", "unique_mode", "", "unique_for", "0", "group", "",
			"schedule_key", "", "schedule_due", "", "schedule_next", "", "schedule_name", "", "overlap", "",
			"json", []string{"0", "1"}[rng.IntN(2)], "keep", []string{"", "0", "-1", "600"}[rng.IntN(4)],
			"timeout", []string{"", "30000"}[rng.IntN(2)], "then_list", "", "dead_list", "", "after", "", "batch", "")}
	case r < 6:
		return &op{kind: opDelete, topics: []string{topic}, args: lua.OpArgs(opDelete, "member", pick(),
			"attempt", strconv.Itoa(rng.IntN(3)), "mode", []string{deleteAny, deleteAck}[rng.IntN(2)], "result", "")}
	case r < 8:
		return &op{kind: opPop, topics: []string{topic}, args: lua.OpArgs(opPop, "mode", []string{popFirst, popBest}[rng.IntN(2)],
			"more", []string{"0", "1"}[rng.IntN(2)])}
	default:
		return &op{kind: opAckPop, topics: []string{topic, topics[rng.IntN(len(topics))]},
			args: lua.OpArgs(opAckPop, "member", pick(), "attempt", strconv.Itoa(rng.IntN(3)), "more", []string{"0", "1"}[rng.IntN(2)],
				"result", "")}
	}
}

// sideOpOf is an operation of another kind on the same store, made
// through the pool's API; it returns what it answered, times aside.
func sideOpOf(rng *rand.Rand, topics []string, ids []uint64, b int) func(ctx context.Context, p *Pool) string {
	topic := topics[rng.IntN(len(topics))]
	id := "900000"
	n := uint64(900000)
	if len(ids) > 0 {
		n = ids[rng.IntN(len(ids))]
		id = strconv.FormatUint(n, 10)
	}
	out := func(what string, err error) string {
		if err != nil {
			return what + " error " + regexp.MustCompile(`\d{10,}`).ReplaceAllString(err.Error(), "N")
		}
		return what + " ok"
	}
	switch rng.IntN(9) {
	case 0:
		return func(ctx context.Context, p *Pool) string {
			_, err := p.Pause(ctx, topic, PauseParams{For: time.Hour})
			return out("pause", err)
		}
	case 1:
		return func(ctx context.Context, p *Pool) string {
			_, err := p.Pause(ctx, topic, PauseParams{For: 0})
			return out("unpause", err)
		}
	case 2:
		return func(ctx context.Context, p *Pool) string {
			_, err := p.Cancel(ctx, id)
			return out("cancel", err)
		}
	case 3:
		return func(ctx context.Context, p *Pool) string {
			_, err := p.MarkEndWait(ctx, n)
			return out("wait", err)
		}
	case 4:
		return func(ctx context.Context, p *Pool) string {
			ok, err := p.ForgetTopic(ctx, topic)
			return out("forget "+strconv.FormatBool(ok), err)
		}
	case 5:
		return func(ctx context.Context, p *Pool) string {
			time.Sleep(3 * time.Millisecond) // 1 ms delays and TTRs run out
			ready, more, err := p.Tick(ctx, b, topic)
			return out(fmt.Sprint("tick ", ready, more), err)
		}
	case 6:
		return func(ctx context.Context, p *Pool) string {
			_, err := p.Release(ctx, id, 0, 7, 0)
			return out("release", err)
		}
	case 7:
		return func(ctx context.Context, p *Pool) string {
			_, err := p.Bury(ctx, id, 0, 7)
			return out("bury", err)
		}
	default:
		return func(ctx context.Context, p *Pool) string {
			_, err := p.KickJob(ctx, id)
			return out("kick", err)
		}
	}
}

// A setting another broker adds while this one's plain path is open is
// obeyed at this one's next call; once removed, the bucket's path stays
// shut, as its defaults hash keeps the mark that some topic has settings.
func TestPlainPathObeysAnotherBroker(t *testing.T) {
	a, ctx := newPool(t)
	other, _ := openPool(t, rueidisOpt(), Options{})
	b := a.keys.bucketOf("s")
	mustPush(t, a, ctx, job.Spec{Topic: "s", Body: "x", TTR: time.Minute})
	if !a.batchers[b].plain.open(time.Now()) {
		t.Fatal("the first push did not take the plain path")
	}
	if err := other.SetTopicConfig(ctx, "s", job.TopicConfig{"max_items": "1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Push(ctx, job.Spec{Topic: "s", Body: "y", TTR: time.Minute, Priority: 1}); !errors.Is(err, job.ErrFull) {
		t.Fatalf("a push past another broker's max_items: %v, want ErrFull", err)
	}
	if err := other.SetTopicConfig(ctx, "s", job.TopicConfig{"max_items": ""}); err != nil {
		t.Fatal(err)
	}
	fields, err := a.client.Do(ctx, a.client.B().Hgetall().Key(a.keys.buckets[b].defaults).Build()).AsStrMap()
	if err != nil {
		t.Fatal(err)
	}
	// The mark that some topic has settings stays (settings.lua): the bucket
	// stays off the plain path, as docs/PERFORMANCE.md says, and works.
	if fields["@configured"] == "" {
		t.Fatalf("the bucket's defaults once the only setting is removed: %v, want the mark kept", fields)
	}
	a.batchers[b].plain.until.Store(0) // as if plainRetry had passed
	mustPush(t, a, ctx, job.Spec{Topic: "s", Body: "z", TTR: time.Minute})
	if a.batchers[b].plain.open(time.Now()) {
		t.Error("a bucket with the mark took the plain path")
	}
}

// At maxmemory a plain push is refused as batch.lua's is (push_plain is
// registered without allow-oom), nothing stored; a plain pop and a plain
// ack still go, on the plain path.
func TestPlainPathAtMaxmemory(t *testing.T) {
	p, ctx := newPool(t)
	b := p.keys.bucketOf("m")
	ids := []uint64{}
	for range 2 {
		ids = append(ids, mustPush(t, p, ctx, job.Spec{Topic: "m", Body: "x", TTR: time.Minute}))
	}
	set := func(v string) {
		if err := p.client.Do(ctx, p.client.B().ConfigSet().ParameterValue().ParameterValue("maxmemory", v).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	set("1") // any use is over it
	defer set("0")
	p.batchers[b].plain.until.Store(0)
	_, perr := p.Push(ctx, job.Spec{Topic: "m", Body: "oom", TTR: time.Minute, Priority: 1})
	plainOpen := p.batchers[b].plain.open(time.Now())
	// The same push through batch.lua: the bucket's gate shut.
	p.batchers[b].plain.shut(time.Now())
	_, berr := p.Push(ctx, job.Spec{Topic: "m", Body: "oom", TTR: time.Minute, Priority: 1})
	p.batchers[b].plain.until.Store(0)
	if !plainOpen {
		t.Error("the push at maxmemory was answered GENERAL: it did not try the plain path")
	}
	if perr == nil || berr == nil || perr.Error() != berr.Error() {
		t.Errorf("push at maxmemory: plain %v, batch %v", perr, berr)
	}
	got, err := p.Pop(ctx, []string{"m"})
	if err != nil || got.Job == nil {
		t.Fatalf("pop at maxmemory: %+v %v", got.Job, err)
	}
	if err := p.Ack(ctx, strconv.FormatUint(got.Job.ID, 10), got.Job.Attempt(), ""); err != nil {
		t.Fatalf("ack at maxmemory: %v", err)
	}
	next, err := p.Pop(ctx, []string{"m"})
	if err != nil || next.Job == nil {
		t.Fatalf("pop at maxmemory: %+v %v", next.Job, err)
	}
	if _, err := p.AckAndPop(ctx, strconv.FormatUint(next.Job.ID, 10), next.Job.Attempt(), "", []string{"m"}); err != nil {
		t.Fatalf("ack and pop at maxmemory: %v", err)
	}
	if !p.batchers[b].plain.open(time.Now()) {
		t.Error("the pop and ack did not stay on the plain path")
	}
	set("0")
	st, err := p.TopicStats(ctx, "m")
	if err != nil || st.Ready != 0 || st.Reserved != 0 {
		t.Fatalf("after: %+v %v (want nothing left: the refused pushes stored nothing)", st, err)
	}
}

// On a Redis Cluster each plain call's keys are in one slot: a plain
// push, pop, ack and ack then pop on topics of every node.
func TestPlainPathOnCluster(t *testing.T) {
	p, ctx := newClusterPool(t)
	for i := range 12 {
		topic := "c" + strconv.Itoa(i)
		id := mustPush(t, p, ctx, job.Spec{Topic: topic, Body: "x", TTR: time.Minute})
		mustPush(t, p, ctx, job.Spec{Topic: topic, Body: "y", TTR: time.Minute})
		got := mustPop(t, p, ctx, topic)
		if got == nil || got.ID != id {
			t.Fatalf("pop of %s: %+v", topic, got)
		}
		next, err := p.AckAndPop(ctx, strconv.FormatUint(id, 10), got.Attempt(), "", []string{topic})
		if err != nil || next.Job == nil {
			t.Fatalf("ack and pop of %s: %+v %v", topic, next.Job, err)
		}
		if err := p.Ack(ctx, strconv.FormatUint(next.Job.ID, 10), next.Job.Attempt(), ""); err != nil {
			t.Fatal(err)
		}
		if b := p.keys.bucketOf(topic); !p.batchers[b].plain.open(time.Now()) {
			t.Errorf("bucket %d's calls did not take the plain path", b)
		}
	}
}
