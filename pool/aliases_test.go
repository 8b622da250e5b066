package pool

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gmq/gmq/job"
)

func TestClientIDs(t *testing.T) {
	p, ctx := newPool(t)
	id := mustPush(t, p, ctx, job.Spec{Topic: "c", Body: "first", ClientID: "order-42", TTR: time.Minute})
	if _, err := p.Push(ctx, job.Spec{Topic: "other", Body: "dup", ClientID: "order-42"}); !errors.Is(err, job.ErrDuplicate) {
		t.Fatalf("duplicate push: %v, want ErrDuplicate", err)
	}
	got, err := p.Resolve(ctx, "order-42")
	if err != nil || got != id {
		t.Fatalf("resolve: %d %v, want %d", got, err, id)
	}
	if j, _ := p.Peek(ctx, num(id)); j.Body != "first" || j.PublicID() != "order-42" {
		t.Fatalf("existing job changed: %+v", j)
	}
	if err := p.Delete(ctx, num(id), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Resolve(ctx, "order-42"); !errors.Is(err, job.ErrNotFound) {
		t.Fatalf("resolve after delete: %v", err)
	}
	mustPush(t, p, ctx, job.Spec{Topic: "c", Body: "second", ClientID: "order-42"})
}

func TestStaleAliasTakenOver(t *testing.T) {
	p, ctx := newPool(t)
	p.opts.AliasGrace = 200 * time.Millisecond
	// A claim whose push never happened, as after a crash between the two steps.
	if err := p.claimAlias(ctx, "ghost", member(999)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Resolve(ctx, "ghost"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Peek(ctx, num(999)); !errors.Is(err, job.ErrNotFound) {
		t.Fatalf("dangling alias must read as not found: %v", err)
	}
	// A retried push waits out the grace, then stores its job.
	start := time.Now()
	id := mustPush(t, p, ctx, job.Spec{Topic: "g", Body: "x", ClientID: "ghost"})
	if took := time.Since(start); took < 150*time.Millisecond {
		t.Fatalf("took over a fresh claim after %v, before the grace", took)
	}
	if got, err := p.Resolve(ctx, "ghost"); err != nil || got != id {
		t.Fatalf("resolve: %d %v, want %d", got, err, id)
	}
}

// A claim that cannot be settled before the caller's deadline (a push of the
// id in flight, as after a Redis stall) is "unavailable, retry", never a 409:
// a producer told 409 takes its job as stored.
func TestClaimOutOfTimeIsNotADuplicate(t *testing.T) {
	p, ctx := newPool(t)
	p.opts.AliasGrace = 5 * time.Second
	if err := p.claimAlias(ctx, "inflight", member(999)); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	_, err := p.Push(short, job.Spec{Topic: "g", Body: "x", ClientID: "inflight"})
	if errors.Is(err, job.ErrDuplicate) || !errors.Is(err, job.ErrUnavailable) {
		t.Fatalf("push while the id's claim is fresh and its job absent: %v, want ErrUnavailable", err)
	}
}

// Deleting a job is one script; dropping its client id afterwards is a second
// step in another slot. When that step fails the delete still happened, so it
// must be reported as done (a retried ack would get a 404), and a job popped
// in the same call must reach its consumer, not be stranded.
func TestDeleteStandsWhenDroppingTheAliasFails(t *testing.T) {
	breakAliases := func(t *testing.T, p *Pool, cid string) { // the drop fails: the hash becomes a string
		if reply, err := redis.Do("SET", p.keys.aliases(p.keys.bucketOf(cid)), "not a hash"); err != nil || reply != "+OK" {
			t.Fatalf("SET: %q %v", reply, err)
		}
	}
	cases := []struct {
		name string
		run  func(t *testing.T, p *Pool, ctx context.Context)
	}{
		{"ack", func(t *testing.T, p *Pool, ctx context.Context) {
			id := mustPush(t, p, ctx, job.Spec{Topic: "t", Body: "x", ClientID: "ack-1", TTR: time.Minute})
			mustPop(t, p, ctx, "t")
			breakAliases(t, p, "ack-1")
			if err := p.Delete(ctx, num(id), 1); err != nil {
				t.Fatalf("ack: %v, want it done", err)
			}
			if _, err := p.Peek(ctx, num(id)); !errors.Is(err, job.ErrNotFound) {
				t.Fatalf("job after its ack: %v", err)
			}
		}},
		{"ack and pop", func(t *testing.T, p *Pool, ctx context.Context) {
			id := mustPush(t, p, ctx, job.Spec{Topic: "t", Body: "x", ClientID: "ap-1", TTR: time.Minute})
			next := mustPush(t, p, ctx, job.Spec{Topic: "t", Body: "y", TTR: time.Minute})
			mustPop(t, p, ctx, "t")
			breakAliases(t, p, "ap-1")
			got, err := p.AckAndPop(ctx, num(id), 1, "", []string{"t"})
			if err != nil || got.Job == nil || got.Job.ID != next {
				t.Fatalf("ack and pop: %+v %v, want job %d", got.Job, err, next)
			}
		}},
		{"pop with TTR 0", func(t *testing.T, p *Pool, ctx context.Context) {
			id := mustPush(t, p, ctx, job.Spec{Topic: "t", Body: "x", ClientID: "once-1"})
			breakAliases(t, p, "once-1")
			if j := mustPop(t, p, ctx, "t"); j == nil || j.ID != id {
				t.Fatalf("pop: %+v, want job %d", j, id)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, ctx := newPool(t)
			c.run(t, p, ctx)
			if p.LeftAliases() != 1 {
				t.Fatalf("LeftAliases = %d, want 1", p.LeftAliases())
			}
		})
	}
}

func TestUnknownTopicCacheMiss(t *testing.T) {
	p, ctx := newPool(t)
	id := mustPush(t, p, ctx, job.Spec{Topic: "miss", Body: "x", TTR: time.Minute})
	// A second pool (another broker) has never seen the job.
	other := New(p.client, p.opts)
	if j := mustPop(t, other, ctx, "miss"); j == nil {
		t.Fatal("no job")
	}
	fresh := New(p.client, p.opts)
	if err := fresh.Delete(ctx, num(id), 1); err != nil {
		t.Fatalf("ack from a broker that never saw the job: %v", err)
	}
}
