package pool

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/gmq/gmq/internal/redistest"
	"github.com/gmq/gmq/job"
)

// newClusterPool is a pool on a real Redis Cluster (3 masters, 3 replicas).
func newClusterPool(t *testing.T) (*Pool, context.Context) {
	p, ctx, _ := newClusterPoolWith(t, Options{})
	return p, ctx
}

// newClusterPoolWith is newClusterPool with opts's wait_replicas, and the cluster.
func newClusterPoolWith(t *testing.T, opts Options) (*Pool, context.Context, *redistest.Cluster) {
	t.Helper()
	c := redistest.StartCluster(t, 3, 1)
	clientOpt, err := rueidis.ParseURL(c.URL())
	if err != nil {
		t.Fatal(err)
	}
	clientOpt.DisableRetry = true
	opts.Buckets = 16
	p, ctx := openPool(t, clientOpt, opts)
	return p, ctx, c
}

// The store on a real Redis Cluster: pushes with client ids (their aliases in
// other slots than their jobs), pops, acks over 10 topics, a page of the
// topic index read across the masters, and pool.Check.
func TestPoolOnRedisCluster(t *testing.T) {
	p, ctx := newClusterPool(t)
	for i := range 50 {
		mustPush(t, p, ctx, job.Spec{Topic: "t" + string(rune('a'+i%10)), Body: "x", TTR: time.Minute, ClientID: "c-" + string(rune('a'+i%26)) + string(rune('a'+i/26))})
	}
	for i := range 10 {
		j := mustPop(t, p, ctx, "t"+string(rune('a'+i)))
		if j == nil {
			t.Fatalf("pop t%c: none", 'a'+i)
		}
		if err := p.Delete(ctx, j.PublicID(), j.Attempt()); err != nil {
			t.Fatal(err)
		}
	}
	// A page of the topic index, its buckets on every master.
	want := []string{"tc", "td", "te", "tf", "tg"}
	if names, total, err := p.TopicPage(ctx, 2, 5); err != nil || total != 10 || !slices.Equal(names, want) {
		t.Fatalf("topics 2 to 7 of the cluster: %q of %d (%v), want %q of 10", names, total, err, want)
	}
	// Every master loses gmq's library (a node restarted without its data,
	// or added): the next calls, on every master, load it again and go on.
	for addr, node := range p.client.Nodes() {
		if err := node.Do(ctx, node.B().FunctionFlush().Build()).Error(); err != nil && !strings.HasPrefix(err.Error(), "READONLY") {
			t.Fatalf("FUNCTION FLUSH on %s: %v", addr, err)
		}
	}
	for i := range 10 {
		j := mustPop(t, p, ctx, "t"+string(rune('a'+i)))
		if j == nil {
			t.Fatalf("pop t%c once the library was flushed: none", 'a'+i)
		}
		if err := p.Delete(ctx, j.PublicID(), j.Attempt()); err != nil {
			t.Fatal(err)
		}
	}
	checkClean(t, p, ctx)
}

// keySlot agrees with Redis's CLUSTER KEYSLOT, and every node and bucket
// of a cluster is shown with its node.
func TestNodesAndBucketsOnCluster(t *testing.T) {
	p, ctx := newClusterPool(t)
	for _, key := range []string{"gmq:{b0}:jobs", "gmq:{b15}:due", "plain", "{}x", "a{b}c{d}"} {
		want, err := p.client.Do(ctx, p.client.B().ClusterKeyslot().Key(key).Build()).AsInt64()
		if err != nil || keySlot(key) != int(want) {
			t.Fatalf("slot of %q: %d, Redis says %d (%v)", key, keySlot(key), want, err)
		}
	}
	// A replica just joined may still be listed as a master without slots
	// (CLUSTER NODES catches up within moments): wait for the cluster's
	// own view to settle, then check it.
	var nodes []job.NodeInfo
	settled := func() bool {
		nodes = p.Nodes(ctx)
		masters := 0
		for _, n := range nodes {
			if n.Role == "master" && n.Slots != "" && n.UsedMemory > 0 {
				masters++
			}
		}
		return len(nodes) == 6 && masters == 3
	}
	for deadline := time.Now().Add(time.Minute); !settled(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("nodes: %+v", nodes)
		}
	}
	for b, addr := range p.BucketNodes(ctx) {
		if addr == "" {
			t.Fatalf("bucket %d has no node", b)
		}
	}
}

// A broker that has not seen a job (restarted, or another of several)
// settles it on a Cluster: knowing no topic of the job's yet, its first call
// must still name keys of one slot only, and the script names the topic.
func TestUnseenJobSettledOnCluster(t *testing.T) {
	c := redistest.StartCluster(t, 3, 0)
	clientOpt, err := rueidis.ParseURL(c.URL())
	if err != nil {
		t.Fatal(err)
	}
	clientOpt.DisableRetry = true
	p, ctx := openPool(t, clientOpt, Options{Buckets: 16})
	other, _ := openPool(t, clientOpt, Options{Buckets: 16})
	for i := range 10 {
		topic := "t" + string(rune('a'+i))
		mustPush(t, p, ctx, job.Spec{Topic: topic, Body: "x", TTR: time.Minute, ClientID: "c-" + topic})
		mustPush(t, p, ctx, job.Spec{Topic: topic, Body: "y", TTR: time.Minute})
		for k := range 2 {
			j := mustPop(t, p, ctx, topic)
			if j == nil {
				t.Fatalf("pop %s: none", topic)
			}
			settle := other.Ack
			if k == 1 {
				settle = func(ctx context.Context, id string, attempt int, _ string) error {
					return other.Delete(ctx, id, attempt)
				}
			}
			if err := settle(ctx, j.PublicID(), j.Attempt(), ""); err != nil {
				t.Fatalf("%s's job %s settled by a pool that never saw it: %v", topic, j.PublicID(), err)
			}
		}
	}
	// A call the Cluster would refuse (a key of another slot) is an error
	// of its batch, not a panic that leaves the bucket's batcher held.
	b := other.keys.bucketOf("ta")
	wrong := ""
	for i := 0; wrong == ""; i++ {
		if k := fmt.Sprintf("elsewhere-%d", i); keySlot(k) != keySlot(other.keys.stats(b)) {
			wrong = k
		}
	}
	if _, err := other.batchOp(ctx, b, &op{kind: opDelete, topics: []string{"ta"}, args: []string{"key", ""}, keys: []string{wrong}, keyArgs: []int{1}}); err == nil {
		t.Fatal("a batch with a key of another slot: no error")
	}
	mustPush(t, other, ctx, job.Spec{Topic: "ta", Body: "after", TTR: time.Minute})
	if j := mustPop(t, other, ctx, "ta"); j == nil || other.Delete(ctx, j.PublicID(), j.Attempt()) != nil {
		t.Fatalf("the bucket after a refused batch: popped %v", j)
	}
	checkClean(t, p, ctx)
}
