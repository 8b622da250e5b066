package pool

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/gmq/gmq/job"
)

// brokerPool is a second pool on the test Redis (not flushed), named
// origin, reading formats up to reads, whose record lasts ttl; Init is left
// to the test.
func brokerPool(t *testing.T, origin string, reads int, ttl time.Duration) *Pool {
	t.Helper()
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{redis.Addr}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	return New(client, withDefaults(Options{Prefix: "gmq", Origin: origin, TickBatch: 10, Buckets: 4,
		Version: "9.9.9", ReadsFormat: reads, AnnounceTTL: ttl}))
}

func metaField(t *testing.T, p *Pool, ctx context.Context, field string) string {
	t.Helper()
	v, err := p.client.Do(ctx, p.client.B().Hget().Key(p.keys.meta()).Field(field).Build()).ToString()
	if err != nil && !rueidis.IsRedisNil(err) {
		t.Fatal(err)
	}
	return v
}

// The store's format is recorded, a broker never starts on a store newer
// than it reads, and the format is raised only when every broker recorded
// reads the new one.
func TestStoreFormat(t *testing.T) {
	t.Run("a fresh store takes the newest format, and the broker is recorded", func(t *testing.T) {
		p, ctx := newPool(t)
		if got := metaField(t, p, ctx, "format"); got != strconv.Itoa(StoreFormat) {
			t.Fatalf("format %q, want %d", got, StoreFormat)
		}
		if got := metaField(t, p, ctx, "broker test"); !strings.HasPrefix(got, strconv.Itoa(StoreFormat)+" ") {
			t.Fatalf("the broker's record %q, want it to read format %d", got, StoreFormat)
		}
	})
	t.Run("a store newer than the broker reads stops its start and is not written", func(t *testing.T) {
		p, ctx := newPool(t)
		if err := p.client.Do(ctx, p.client.B().Del().Key(p.keys.meta()).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		if err := p.client.Do(ctx, p.client.B().Hset().Key(p.keys.meta()).FieldValue().FieldValue("format", "3").Build()).Error(); err != nil {
			t.Fatal(err)
		}
		old := brokerPool(t, "old", 2, time.Minute)
		err := old.Init(ctx)
		if !errors.Is(err, ErrStoreTooNew) || !strings.Contains(err.Error(), "store format 3") ||
			!strings.Contains(err.Error(), "gmq 9.9.9) reads formats up to 2") {
			t.Fatalf("init: %v, want ErrStoreTooNew naming both formats", err)
		}
		if got := metaField(t, p, ctx, "buckets"); got != "" {
			t.Fatalf("the newer store was written: buckets %q", got)
		}
		if _, err := old.Push(ctx, job.Spec{Topic: "t", Body: "x", TTR: time.Minute}); !errors.Is(err, ErrStoreTooNew) {
			t.Fatalf("a push: %v, want ErrStoreTooNew", err)
		}
	})
	t.Run("a newer broker raises the format when the older one has gone", func(t *testing.T) {
		redis.Flush(t)
		ctx := context.Background()
		p := brokerPool(t, "test", 1, time.Minute) // reads 1 only
		if err := p.Init(ctx); err != nil {
			t.Fatal(err)
		}
		newer := brokerPool(t, "newer", 2, time.Minute)
		if err := newer.Init(ctx); err != nil {
			t.Fatal(err)
		}
		f, err := newer.Announce(ctx)
		if err != nil || f.Store != 1 || len(f.Behind) != 1 || f.Behind[0] != "test" {
			t.Fatalf("with an older broker recorded: %+v %v, want format 1 held back by test", f, err)
		}
		if err := p.Retire(ctx); err != nil {
			t.Fatal(err)
		}
		if f, err := newer.Announce(ctx); err != nil || f.Store != 2 || len(f.Behind) != 0 {
			t.Fatalf("after the older one retired: %+v %v, want format 2", f, err)
		}
		// The older broker, back (its record had lapsed), refuses every call.
		if _, err := p.Announce(ctx); !errors.Is(err, ErrStoreTooNew) {
			t.Fatalf("the older broker's announce: %v", err)
		}
		if _, err := p.Pop(ctx, []string{"t"}); !errors.Is(err, ErrStoreTooNew) {
			t.Fatalf("the older broker's pop: %v, want ErrStoreTooNew", err)
		}
	})
	t.Run("a record that lapsed holds nothing back", func(t *testing.T) {
		redis.Flush(t)
		ctx := context.Background()
		gone := brokerPool(t, "gone", 1, 50*time.Millisecond)
		if err := gone.Init(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond) // past its record's time: a slow machine only sleeps longer
		newer := brokerPool(t, "newer", 2, time.Minute)
		if err := newer.Init(ctx); err != nil {
			t.Fatal(err)
		}
		if got := metaField(t, newer, ctx, "format"); got != "2" {
			t.Fatalf("format %q, want 2: the lapsed record held the raise back", got)
		}
		if got := metaField(t, newer, ctx, "broker gone"); got != "" {
			t.Fatalf("the lapsed record is still there: %q", got)
		}
	})
}
