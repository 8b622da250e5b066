package dispatcher

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/gmq/gmq/internal/redistest"
	"github.com/gmq/gmq/job"
	"github.com/gmq/gmq/pool"
)

// A status set through this broker holds from the moment SetStatus
// returns, though a status poll that read Redis before the set ends after
// it (a busy machine made TestConformance's draining broker take pushes):
// the poll's steps, with the set between them.
func TestAStatusSetHereOutlivesAnOlderPoll(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	client, err := pool.Dial(ctx, srv.URL(), 5*time.Second, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	p := pool.New(client, pool.Options{Prefix: "gmq", Origin: "test", Buckets: 4, TickBatch: 10})
	if err := p.Init(ctx); err != nil {
		t.Fatal(err)
	}
	d := New(p, Options{StatusPoll: time.Second, Log: slog.New(slog.DiscardHandler)})
	sets := d.statusSetsSoFar()
	read, err := p.Status(ctx, job.StatusLayer{}) // the poll reads Redis: up
	if err != nil || read.Fleet.Now != job.Up {
		t.Fatalf("the poll read %v %v", read, err)
	}
	if err := d.Status().Set(ctx, job.ReadOnly); err != nil {
		t.Fatal(err)
	}
	d.polledStatus(read, sets) // the poll ends
	if got := d.Status().Announced(); got != job.ReadOnly {
		t.Fatalf("the status is %v after a poll older than the set, want readonly", got)
	}
	read.Fleet = job.StatusLayer{} // a poll after the set (another broker set up)
	d.polledStatus(read, d.statusSetsSoFar())
	if got := d.Status().Announced(); got != job.Up {
		t.Fatalf("the status is %v after a newer poll, want up", got)
	}
}

// statusSetsSoFar is how many statuses were set through this broker.
func (d *Dispatcher) statusSetsSoFar() uint64 {
	d.status.mu.Lock()
	defer d.status.mu.Unlock()
	return d.status.sets
}
