package pool

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/gmq/gmq/job"
)

// spread returns per topics of each of n buckets, the buckets in turn.
func spread(p *Pool, n, per int) []string {
	var out []string
	for b := range n {
		out = append(out, sameBucket(p, b, per)...)
	}
	return out
}

// A reserve over topics of several buckets on one Redis is one call
// (pop_best_plain.lua), and it pops and writes what the peeks and the pop
// of the other path do. Two pools on one Redis, under prefixes of their
// own, run the same random pushes (priorities 0-2, TTR 0 now and then, a
// delay now and then), best pops over two to six topics of three buckets,
// acks, and pauses and resumes; the second pool is told it is on a Cluster,
// so its pops peek each bucket, then pop. After each step the jobs popped
// agree and every key of the two stores does (times aside); the first
// pool's pop made one call whenever every topic it named was open, and at
// the end the totals agree too.
func TestPopBestPlainAgreesWithPeeks(t *testing.T) {
	for seed := range uint64(3) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			redis.Flush(t)
			plain, ctx := prefixedPool(t, "p")
			general, _ := prefixedPool(t, "g")
			general.oneNode.Store(false)
			if !plain.oneNode.Load() {
				t.Fatal("a pool of one Redis does not know it is one")
			}
			topics := spread(plain, 3, 2)
			rng := rand.New(rand.NewPCG(seed, 51))
			var held [][2]*job.Job      // reserved now: the plain pool's job, the general pool's
			ids := map[*Pool][]uint64{} // each pool's jobs, in the order pushed: their ids differ
			paused := map[string]bool{}
			oneCall := 0
			for step := range 150 {
				switch r := rng.IntN(10); {
				case r < 4 || (r == 9 && rng.IntN(3) > 0):
					spec := job.Spec{Topic: topics[rng.IntN(len(topics))], Body: strconv.Itoa(step), Priority: uint32(rng.IntN(3)),
						TTR: time.Minute}
					if rng.IntN(6) == 0 {
						spec.TTR = 0
					}
					if rng.IntN(8) == 0 {
						spec.Delay = time.Hour
					}
					for _, p := range []*Pool{plain, general} {
						pushed, err := p.Push(ctx, spec)
						if err != nil {
							t.Fatal(err)
						}
						ids[p] = append(ids[p], pushed.ID)
					}
				case r < 8:
					named := pickTopics(rng, topics)
					before := plain.batchCounts.calls.Load()
					got, err := plain.PopBest(ctx, named)
					calls := plain.batchCounts.calls.Load() - before
					want, werr := general.PopBest(ctx, named)
					if err != nil || werr != nil {
						t.Fatalf("step %d, pop of %v: %v, %v", step, named, err, werr)
					}
					if g, w := poppedOf(got, ids[plain]), poppedOf(want, ids[general]); g != w {
						t.Fatalf("step %d, pop of %v: one call %s, peeks %s", step, named, g, w)
					}
					open, buckets := true, map[int]bool{}
					for _, topic := range named {
						open = open && !paused[topic] && plain.plainTopics.open(topic, time.Now())
						buckets[plain.keys.bucketOf(topic)] = true
					}
					if open && len(buckets) > 1 {
						if calls != 1 {
							t.Fatalf("step %d, pop of %v over %d buckets: %d calls, want 1", step, named, len(buckets), calls)
						}
						oneCall++
					}
					if got.Job != nil && got.Job.State == job.Reserved {
						held = append(held, [2]*job.Job{got.Job, want.Job})
					}
				case r == 8:
					if len(held) == 0 {
						break
					}
					k := rng.IntN(len(held))
					pair := held[k]
					held = append(held[:k], held[k+1:]...)
					for i, p := range []*Pool{plain, general} {
						if err := p.Ack(ctx, strconv.FormatUint(pair[i].ID, 10), pair[i].Attempt(), ""); err != nil {
							t.Fatal(err)
						}
					}
				default:
					topic := topics[rng.IntN(len(topics))]
					d := time.Hour
					if paused[topic] {
						d = 0 // resume
					}
					paused[topic] = d > 0
					if d == 0 { // as if plainRetry had passed: its pops may take the one call again
						plain.plainTopics.mu.Lock()
						delete(plain.plainTopics.until, topic)
						plain.plainTopics.mu.Unlock()
					}
					for _, p := range []*Pool{plain, general} {
						if _, err := p.Pause(ctx, topic, PauseParams{For: d, EvenIfUnknown: true}); err != nil {
							t.Fatal(err)
						}
					}
				}
				if g, w := numbered(storeDump(t, ctx, plain, "p"), ids[plain]), numbered(storeDump(t, ctx, general, "g"), ids[general]); g != w {
					t.Fatalf("after step %d the stores differ:\none call:\n%s\npeeks:\n%s", step, g, w)
				}
			}
			if oneCall < 10 {
				t.Errorf("%d pops over several buckets in one call, want at least 10", oneCall)
			}
			for _, p := range []*Pool{plain, general} {
				if err := p.FlushTotals(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if g, w := numbered(storeDump(t, ctx, plain, "p"), ids[plain]), numbered(storeDump(t, ctx, general, "g"), ids[general]); g != w {
				t.Fatalf("the stores' totals differ:\none call:\n%s\npeeks:\n%s", g, w)
			}
		})
	}
}

// pickTopics returns two to all of topics, in a random order.
func pickTopics(rng *rand.Rand, topics []string) []string {
	out := append([]string(nil), topics...)
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out[:2+rng.IntN(len(out)-1)]
}

// poppedOf is what a pop gave, times aside, its job by its place in ids.
func poppedOf(got Popped, ids []uint64) string {
	if got.Job == nil {
		return fmt.Sprintf("none (wait %v on %q)", got.PauseWait > 0, got.WaitTopic)
	}
	j := got.Job
	return fmt.Sprintf("#%d %s %q pri %d state %v attempt %d more %v", slices.Index(ids, j.ID), j.Topic, j.Body, j.Priority, j.State, j.Attempt(), got.More)
}

// numbered is a store dump with each job's member written as its place in
// ids (two pools' jobs have ids of their own).
func numbered(dump string, ids []uint64) string {
	pairs := make([]string, 0, 2*len(ids))
	for k, id := range ids {
		pairs = append(pairs, member(id), "#"+strconv.Itoa(k))
	}
	return pausedUntil.ReplaceAllString(strings.NewReplacer(pairs...).Replace(dump), "paused_until=time")
}

// A reserve over several buckets takes the other path, and gives the same
// job, when a bucket has settings (its gate shut for plainRetry), a topic
// is paused (its own gate shut), or the Redis is a Cluster; the calls say
// which path it took.
func TestPopBestPlainRefusals(t *testing.T) {
	p, ctx := newPool(t)
	calls := func(topics ...string) (*job.Job, int64) {
		t.Helper()
		before := p.batchCounts.calls.Load()
		got, err := p.PopBest(ctx, topics)
		if err != nil {
			t.Fatal(err)
		}
		return got.Job, p.batchCounts.calls.Load() - before
	}
	a, b := sameBucket(p, 0, 1)[0], sameBucket(p, 1, 2)
	push := func(topic string, pri uint32) uint64 {
		return mustPush(t, p, ctx, job.Spec{Topic: topic, Body: topic, Priority: pri, TTR: time.Minute})
	}

	want := push(b[0], 1)
	push(a, 2)
	if got, n := calls(a, b[0]); got == nil || got.ID != want || n != 1 {
		t.Fatalf("plain: %+v in %d calls, want job %d in 1", got, n, want)
	}

	if err := p.SetTopicConfig(ctx, b[1], job.TopicConfig{"max_items": "100"}); err != nil {
		t.Fatal(err)
	}
	want = push(b[0], 1)                                                  // refused as 'settings' by push_plain: the gate shut
	p.batchers[1].plain.until.Store(0)                                    // for the pop to find it so
	if got, n := calls(a, b[0]); got == nil || got.ID != want || n != 4 { // the refused call, two peeks, the pop
		t.Fatalf("a bucket with settings: %+v in %d calls, want job %d in 4", got, n, want)
	}
	if p.batchers[1].plain.open(time.Now()) || !p.batchers[0].plain.open(time.Now()) {
		t.Fatal("the bucket with settings did not shut its own gate alone")
	}
	want = push(b[0], 1)
	if got, n := calls(a, b[0]); got == nil || got.ID != want || n != 3 {
		t.Fatalf("a bucket with settings, gate shut: %+v in %d calls, want job %d in 3", got, n, want)
	}
	c := sameBucket(p, 2, 1)[0]
	want = push(c, 1)
	if _, err := p.Pause(ctx, c, PauseParams{For: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if got, n := calls(a, c); got == nil || got.ID == want || got.Topic != a || n != 4 {
		t.Fatalf("a paused topic: %+v in %d calls, want the other topic's job in 4", got, n)
	}
	if p.plainTopics.open(c, time.Now()) || !p.batchers[2].plain.open(time.Now()) {
		t.Fatal("the paused topic did not shut its own gate alone")
	}

	p.oneNode.Store(false) // as on a Cluster
	d := sameBucket(p, 3, 1)[0]
	want = push(d, 0)
	if got, n := calls(a, d); got == nil || got.ID != want || n != 3 {
		t.Fatalf("on a Cluster: %+v in %d calls, want job %d in 3 (two peeks, the pop)", got, n, want)
	}
}

// Behind something that hides a Cluster (a proxy; here a client of one
// node that knows no better), the one call is refused CROSSSLOT: the pool
// stops trying it and takes the peeks-then-pop way, which keeps each call
// in one slot.
func TestPopBestPlainBehindAProxy(t *testing.T) {
	p, ctx := newClusterPool(t)
	nodes := p.BucketNodes(ctx)
	var order []int // two buckets of one node
	for b := range nodes {
		for _, o := range order {
			if nodes[o] != nodes[b] {
				order = order[:0]
			}
		}
		if order = append(order, b); len(order) == 2 {
			break
		}
	}
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{nodes[order[0]]}, ForceSingleClient: true,
		DisableCache: true, DisableRetry: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	single := New(client, p.opts)
	if !single.oneNode.Load() {
		t.Fatal("a client of one node does not think it is one")
	}
	groups := map[int][]string{order[0]: sameBucket(p, order[0], 1), order[1]: sameBucket(p, order[1], 1)}
	if _, done, err := single.popBestPlain(ctx, order, groups); done || err != nil {
		t.Fatalf("the one call across slots: done %v, %v; want not done, to take the other way", done, err)
	}
	if single.oneNode.Load() {
		t.Error("after CROSSSLOT the pool still tries the one call")
	}
}
