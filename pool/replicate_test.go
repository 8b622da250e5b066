package pool

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/gmq/gmq/internal/redistest"
	"github.com/gmq/gmq/job"
)

// replicaWait is the wait_timeout of newReplicatedPool: long enough that
// what must not wait for the replica (a pop, a push that does not ask it)
// is told apart from what does, with room for a loaded machine.
const replicaWait = 2 * time.Second

// newReplicatedPool is a pool on master (which has a replica of its own)
// with the given wait_replicas.
func newReplicatedPool(t *testing.T, master *redistest.Server, replicas int) (*Pool, context.Context) {
	t.Helper()
	return openPool(t, rueidis.ClientOption{InitAddress: []string{master.Addr}},
		Options{WaitReplicas: replicas, WaitTimeout: replicaWait})
}

// With wait_replicas, a push is answered once the replica holds it; while
// the replica is frozen the push is refused after wait_timeout with a 503
// that says why (and it is on the master: a 503 is not a lie about that
// either), while pops, and pushes of a pool that does not wait, go on. A
// WAIT sent on another connection than the push's would count no write of
// its own and answer at once: the frozen replica shows the WAIT follows the
// push on its connection.
func TestWaitReplicas(t *testing.T) {
	master := redistest.Start(t)
	replica := redistest.StartReplica(t, master)
	waiting, ctx := newReplicatedPool(t, master, 1)
	plain, _ := newReplicatedPool(t, master, 0)

	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i := range 100 { // concurrent, so batched: one WAIT a batch
		wg.Go(func() {
			if _, err := waiting.Push(ctx, job.Spec{Topic: fmt.Sprintf("w%d", i%3), Body: "x", TTR: time.Minute}); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("a push with the replica up: %v", err)
	}

	// Frozen until the checks are done, however long a loaded machine takes
	// over them (a fixed pause could end before the last one).
	thaw, err := replica.Freeze()
	if err != nil {
		t.Fatal(err)
	}
	defer thaw() // a failed check: let the replica go on for the clean-up
	start := time.Now()
	_, err = waiting.Push(ctx, job.Spec{Topic: "w0", Body: "unconfirmed", TTR: time.Minute})
	if !errors.Is(err, job.ErrUnavailable) || !strings.Contains(err.Error(), "0 of the 1 replicas") {
		t.Fatalf("a push the replica cannot confirm: %v", err)
	}
	if took := time.Since(start); took < replicaWait {
		t.Fatalf("refused after %v, before wait_timeout: the WAIT did not follow the push", took)
	}
	if _, errs := waiting.PushBatch(ctx, []job.Spec{{Topic: "w1", Body: "a"}, {Topic: "w2", Body: "b"}}); !errors.Is(errs[0], job.ErrUnavailable) || !errors.Is(errs[1], job.ErrUnavailable) {
		t.Fatalf("a batch push the replica cannot confirm: %v", errs)
	}
	// Neither waits wait_timeout for the replica: each takes milliseconds,
	// under replicaWait on any machine that runs the test.
	start = time.Now()
	if _, err := plain.Push(ctx, job.Spec{Topic: "w0", Body: "plain", TTR: time.Minute}); err != nil || time.Since(start) >= replicaWait {
		t.Fatalf("a push without wait_replicas: %v after %v", err, time.Since(start))
	}
	start = time.Now()
	if j := mustPop(t, waiting, ctx, "w1"); j == nil || time.Since(start) >= replicaWait {
		t.Fatalf("a pop waited for the replica (%v) or found nothing", time.Since(start))
	}
	if err := thaw(); err != nil {
		t.Fatal(err)
	}

	if _, err := waiting.Push(ctx, job.Spec{Topic: "w0", Body: "confirmed", TTR: time.Minute}); err != nil {
		t.Fatalf("a push once the replica is back: %v", err)
	}
	// Refused is not lost: the unconfirmed pushes are on the master.
	stats, err := waiting.TopicStats(ctx, "w0")
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(34 + 1 + 1 + 1); stats.Ready != want { // 34 of the 100, unconfirmed, plain, confirmed
		t.Fatalf("w0 holds %d ready jobs, want %d", stats.Ready, want)
	}
	checkClean(t, waiting, ctx)
}

// On a cluster the WAIT goes to the node of the push's bucket: with one
// master's replica frozen, pushes to that master's buckets are refused and
// pushes to the others' confirmed.
func TestWaitReplicasOnCluster(t *testing.T) {
	p, ctx, cluster := newClusterPoolWith(t, Options{WaitReplicas: 1, WaitTimeout: 300 * time.Millisecond})
	nodes := p.BucketNodes(ctx)
	home := nodes[p.keys.bucketOf("a")]
	other := ""
	for i := range 100 {
		if t := fmt.Sprintf("o%d", i); nodes[p.keys.bucketOf(t)] != home {
			other = t
			break
		}
	}
	var master *redistest.Server
	for _, n := range cluster.Nodes {
		if n.Addr == home {
			master = n
		}
	}
	replica := cluster.ReplicaOf(master)
	if master == nil || replica == nil || other == "" {
		t.Fatalf("no master (%v), replica (%v) or other topic (%q) for bucket node %s", master, replica, other, home)
	}
	for _, topic := range []string{"a", other} {
		if _, err := p.Push(ctx, job.Spec{Topic: topic, Body: "x", TTR: time.Minute}); err != nil {
			t.Fatalf("push to %s with every replica up: %v", topic, err)
		}
	}
	// Frozen until both pushes are done, however long a loaded machine takes.
	thaw, err := replica.Freeze()
	if err != nil {
		t.Fatal(err)
	}
	defer thaw() // a failed check: let the replica go on for the clean-up
	if _, err := p.Push(ctx, job.Spec{Topic: "a", Body: "x", TTR: time.Minute}); !errors.Is(err, job.ErrUnavailable) {
		t.Fatalf("a push to the frozen replica's master: %v", err)
	}
	if _, err := p.Push(ctx, job.Spec{Topic: other, Body: "x", TTR: time.Minute}); err != nil {
		t.Fatalf("a push to another master: %v", err)
	}
	if err := thaw(); err != nil {
		t.Fatal(err)
	}
}

// A master with fewer replicas than wait_replicas asks for (a replica
// promoted by a failover, left with none) refuses every push: the reason
// names the shortfall, and the next push after the timeout is refused the
// same way, never answered as if stored on replicas.
func TestWaitReplicasWithoutReplicas(t *testing.T) {
	p, ctx := newPoolWith(t, Options{WaitReplicas: 1, WaitTimeout: 50 * time.Millisecond})
	for range 2 {
		if _, err := p.Push(ctx, job.Spec{Topic: "alone", Body: "x", TTR: time.Minute}); !errors.Is(err, job.ErrUnavailable) ||
			!strings.Contains(err.Error(), "0 of the 1 replicas") {
			t.Fatalf("a push to a master without replicas: %v", err)
		}
	}
	if j := mustPop(t, p, ctx, "alone"); j == nil {
		t.Fatal("the refused pushes are not on the master, as the 503 says they are")
	}
}

// A unique push that replaces a waiting job writes it as a push does: with
// wait_replicas unmet, it is refused the same way, not answered "replaced".
func TestWaitReplicasCoversReplace(t *testing.T) {
	p, ctx := newPoolWith(t, Options{WaitReplicas: 1, WaitTimeout: 50 * time.Millisecond})
	rep := &job.Unique{Key: "k", For: time.Minute, Mode: job.UniqueReplace}
	for range 2 { // the first stores, the second replaces: both unconfirmed
		if got, err := p.Push(ctx, job.Spec{Topic: "alone", Body: "x", TTR: time.Minute, Unique: rep}); !errors.Is(err, job.ErrUnavailable) {
			t.Fatalf("a unique push to a master without replicas: %+v %v", got, err)
		}
	}
}
