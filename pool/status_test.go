package pool

import (
	"errors"
	"testing"
	"time"

	"github.com/gmq/gmq/job"
)

// A stricter fleet status set with a grace keeps gmq:status, which brokers
// older than the grace read, at the status obeyed until the grace ends;
// the first read after it makes the pending one gmq:status, so an older
// broker enforces it within its poll too. A looser one is written at once.
func TestFleetStatusGraceAndOlderBrokers(t *testing.T) {
	p, ctx := newPool(t)
	const grace = 300 * time.Millisecond
	layer, redisNow, err := p.SetStatus(ctx, StatusScope{}, job.ReadOnly, grace)
	if err != nil {
		t.Fatal(err)
	}
	if layer.Now != job.Up || layer.Next != job.ReadOnly || layer.At.Sub(redisNow) != grace {
		t.Fatalf("the layer set: %+v at %v", layer, redisNow)
	}
	if legacy, err := p.LegacyStatus(ctx); err != nil || legacy != job.Up {
		t.Fatalf("gmq:status during the grace: %v %v, want up", legacy, err)
	}
	if _, _, err := p.SetStatus(ctx, StatusScope{}, job.Quiescent, grace); !errors.Is(err, job.ErrStatusPending) {
		t.Fatalf("a second stricter status while one is pending: %v", err)
	}
	for {
		read, err := p.Status(ctx, job.StatusLayer{Now: job.Up, Next: job.Up})
		if err != nil {
			t.Fatal(err)
		}
		if !read.Now.Before(layer.At) {
			if read.Fleet.Now != job.ReadOnly || read.Fleet.At != (time.Time{}) {
				t.Fatalf("the fleet after the grace: %+v", read.Fleet)
			}
			break
		}
		if read.Fleet.Enforced(read.Now) != job.Up {
			t.Fatalf("enforced before its time: %+v at %v", read.Fleet, read.Now)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if legacy, err := p.LegacyStatus(ctx); err != nil || legacy != job.ReadOnly {
		t.Fatalf("gmq:status after the grace: %v %v, want readonly", legacy, err)
	}
	if _, _, err := p.SetStatus(ctx, StatusScope{}, job.Up, grace); err != nil {
		t.Fatal(err)
	}
	if legacy, err := p.LegacyStatus(ctx); err != nil || legacy != job.Up {
		t.Fatalf("gmq:status after a looser set: %v %v, want up at once", legacy, err)
	}
}

// A broker's own layer: created at boot, found by name, gone when it
// retires or its record lapses; another broker's name not recorded is not
// found.
func TestBrokerStatusRecords(t *testing.T) {
	p, ctx := newPool(t)
	if _, _, err := p.SetStatus(ctx, StatusScope{Broker: "other"}, job.ReadOnly, 0); !errors.Is(err, job.ErrNotFound) {
		t.Fatalf("a broker with no record: %v", err)
	}
	if _, _, err := p.SetStatus(ctx, StatusScope{Broker: p.Origin(), Create: true}, job.WriteAvoid, 0); err != nil {
		t.Fatal(err)
	}
	read, err := p.Status(ctx, job.StatusLayer{Now: job.WriteAvoid, Next: job.WriteAvoid})
	if err != nil {
		t.Fatal(err)
	}
	if got := read.Brokers[p.Origin()]; got.Now != job.WriteAvoid || len(read.Brokers) != 1 {
		t.Fatalf("the brokers: %+v", read.Brokers)
	}
	if err := p.Retire(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.SetStatus(ctx, StatusScope{Broker: p.Origin()}, job.Up, 0); !errors.Is(err, job.ErrNotFound) {
		t.Fatalf("a retired broker: %v", err)
	}
	// A read recreates the record of a broker whose record went (Redis was
	// out of reach past its time, or wiped) from what the broker knows.
	read, err = p.Status(ctx, job.StatusLayer{Now: job.Quiescent, Next: job.Quiescent})
	if err != nil || read.Brokers[p.Origin()].Now != job.Quiescent {
		t.Fatalf("recreated: %+v %v", read.Brokers, err)
	}
}
