package pool

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gmq/gmq/job"
)

// bodiesInHash counts the bodies in every bucket's bodies hash.
func bodiesInHash(t *testing.T, p *Pool, ctx context.Context) int64 {
	t.Helper()
	var n int64
	for b := range p.opts.Buckets {
		got, err := p.client.Do(ctx, p.client.B().Hlen().Key(p.keys.buckets[b].bodies).Build()).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		n += got
	}
	return n
}

// migrateAll runs whole migration passes over every bucket and returns how
// many bodies moved.
func migrateAll(t *testing.T, p *Pool, ctx context.Context) int64 {
	t.Helper()
	var moved int64
	for b := range p.opts.Buckets {
		cursor := "0"
		for {
			next, n, err := p.MigrateStep(ctx, b, cursor)
			if err != nil {
				t.Fatal(err)
			}
			moved += n
			if cursor = next; cursor == "0" {
				break
			}
		}
	}
	return moved
}

// Store format 2 keeps a body of up to 4 KiB in its record and a longer
// one in the bucket's bodies hash; a store raised from format 1 is read in
// both while a migration moves format 1's short bodies into their records.
func TestBodiesInRecords(t *testing.T) {
	long := strings.Repeat("L", 5000)
	t.Run("short bodies in their records, long ones in the bodies hash", func(t *testing.T) {
		p, ctx := newPool(t)
		mustPush(t, p, ctx, job.Spec{Topic: "b", Body: "short", TTR: time.Minute})
		mustPush(t, p, ctx, job.Spec{Topic: "b", Body: long, TTR: time.Minute})
		mustPush(t, p, ctx, job.Spec{Topic: "b", Body: "", TTR: time.Minute})
		if n := bodiesInHash(t, p, ctx); n != 1 {
			t.Fatalf("%d bodies in the hash, want the long one", n)
		}
		checkStore(t, p, ctx)
		for _, want := range []string{"short", long, ""} {
			j := mustPop(t, p, ctx, "b")
			if j == nil || j.Body != want {
				t.Fatalf("popped %+v, want body of %d bytes", j, len(want))
			}
			if err := p.Delete(ctx, strconv.FormatUint(j.ID, 10), j.Attempt()); err != nil {
				t.Fatal(err)
			}
		}
		if n := bodiesInHash(t, p, ctx); n != 0 {
			t.Fatalf("%d bodies left in the hash", n)
		}
		checkStore(t, p, ctx)
	})
	t.Run("a changed body moves between the record and the hash by its length", func(t *testing.T) {
		p, ctx := newPool(t)
		id := strconv.FormatUint(mustPush(t, p, ctx, job.Spec{Topic: "c", Body: "short", TTR: time.Minute}), 10)
		for _, tc := range []struct {
			body   string
			inHash int64
		}{{long, 1}, {"short again", 0}, {"", 0}, {long + long, 1}} {
			body := tc.body
			if _, err := p.UpdateJob(ctx, id, job.Update{Body: &body}); err != nil {
				t.Fatal(err)
			}
			if n := bodiesInHash(t, p, ctx); n != tc.inHash {
				t.Fatalf("a body of %d bytes: %d in the hash, want %d", len(body), n, tc.inHash)
			}
			if j, err := p.Peek(ctx, id); err != nil || j.Body != body {
				t.Fatalf("peek after a body of %d bytes: %v", len(body), err)
			}
			checkStore(t, p, ctx)
		}
		if j := mustPop(t, p, ctx, "c"); j == nil || j.Body != long+long {
			t.Fatalf("popped %+v", j)
		}
	})
	t.Run("a store raised from format 1 reads both, and the migration moves the short bodies", func(t *testing.T) {
		redis.Flush(t)
		ctx := context.Background()
		old := brokerPool(t, "old", 1, time.Minute)
		if err := old.Init(ctx); err != nil {
			t.Fatal(err)
		}
		var ids []uint64
		for i := range 300 {
			ids = append(ids, mustPush(t, old, ctx, job.Spec{Topic: "m" + strconv.Itoa(i%7), Body: "old-" + strconv.Itoa(i), TTR: time.Minute}))
		}
		mustPush(t, old, ctx, job.Spec{Topic: "m0", Body: long, TTR: time.Minute})
		if n := bodiesInHash(t, old, ctx); n != 301 {
			t.Fatalf("format 1: %d bodies in the hash, want 301", n)
		}
		if err := old.Retire(ctx); err != nil {
			t.Fatal(err)
		}
		p := brokerPool(t, "new", StoreFormat, time.Minute)
		if err := p.Init(ctx); err != nil {
			t.Fatal(err)
		}
		if p.Format() != StoreFormat {
			t.Fatalf("the store is at format %d, want %d", p.Format(), StoreFormat)
		}
		// Format 1's jobs read, and changed, by a format 2 broker.
		if j, err := p.Peek(ctx, strconv.FormatUint(ids[0], 10)); err != nil || j.Body != "old-0" {
			t.Fatalf("an old job: %+v %v", j, err)
		}
		changed := "changed"
		if _, err := p.UpdateJob(ctx, strconv.FormatUint(ids[1], 10), job.Update{Body: &changed}); err != nil {
			t.Fatal(err)
		}
		mustPush(t, p, ctx, job.Spec{Topic: "m0", Body: "new", TTR: time.Minute})
		if n := bodiesInHash(t, p, ctx); n != 300 {
			t.Fatalf("%d bodies in the hash, want 300: the changed one moved to its record, the new one is there", n)
		}
		checkStore(t, p, ctx)
		if moved := migrateAll(t, p, ctx); moved != 299 {
			t.Fatalf("the migration moved %d bodies, want 299", moved)
		}
		if n := bodiesInHash(t, p, ctx); n != 1 {
			t.Fatalf("%d bodies in the hash after the migration, want the long one", n)
		}
		checkStore(t, p, ctx)
		bodies := map[string]bool{}
		for i := range 7 {
			for j := mustPop(t, p, ctx, "m"+strconv.Itoa(i)); j != nil; j = mustPop(t, p, ctx, "m"+strconv.Itoa(i)) {
				bodies[j.Body] = true
			}
		}
		if len(bodies) != 302 || !bodies["old-0"] || !bodies["changed"] || bodies["old-1"] || !bodies[long] || !bodies["new"] {
			t.Fatalf("popped %d distinct bodies, want 302 (each once, old-1 changed)", len(bodies))
		}
	})
	t.Run("a migration step is bounded", func(t *testing.T) {
		p, ctx := newPoolWith(t, Options{ReadsFormat: 1, Buckets: 1})
		specs := make([]job.Spec, 2500)
		for i := range specs {
			specs[i] = job.Spec{Topic: "many", Body: "x", TTR: time.Minute}
		}
		if _, errs := p.PushBatch(ctx, specs); errs[0] != nil {
			t.Fatal(errs[0])
		}
		p.opts.ReadsFormat = StoreFormat
		if _, err := p.Announce(ctx); err != nil {
			t.Fatal(err)
		}
		_, moved, err := p.MigrateStep(ctx, 0, "0")
		if err != nil || moved == 0 || moved > 2*migrateStep {
			t.Fatalf("one step moved %d (%v), want some, and at most about %d", moved, err, migrateStep)
		}
		migrateAll(t, p, ctx)
		if n := bodiesInHash(t, p, ctx); n != 0 {
			t.Fatalf("%d bodies left", n)
		}
		checkStore(t, p, ctx)
	})
}
