package dispatcher_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gmq/gmq/dispatcher"
	"github.com/gmq/gmq/job"
)

// ackOne acks job id at attempt (0: any) as a consumer does.
func ackOne(d *dispatcher.Dispatcher, ctx context.Context, id string, attempt int) error {
	_, err := d.Settle(ctx, dispatcher.SettleParams{Ack: dispatcher.Ack{ID: id, Attempt: attempt}, Action: dispatcher.ActionAck})
	return err
}

// TestSettle: each action on a reserved job, by the one Settle, leaves the
// job where the action says; a stale attempt changes nothing.
func TestSettle(t *testing.T) {
	b := broker(t)
	d := b.Dispatcher
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		params dispatcher.SettleParams // its Ack is the reserved job's delivery
		state  job.State               // after it (0: gone)
	}{
		{"ack", dispatcher.SettleParams{Action: dispatcher.ActionAck}, 0},
		{"release", dispatcher.SettleParams{Action: dispatcher.ActionRelease, Priority: job.KeepPriority}, job.Ready},
		{"release later", dispatcher.SettleParams{Action: dispatcher.ActionRelease, Priority: 5, Delay: time.Hour}, job.Delayed},
		{"bury", dispatcher.SettleParams{Action: dispatcher.ActionBury, Priority: job.KeepPriority}, job.Buried},
		{"touch", dispatcher.SettleParams{Action: dispatcher.ActionTouch}, job.Reserved},
		{"fail", dispatcher.SettleParams{Action: dispatcher.ActionFail, Reason: "boom"}, job.Delayed},
		{"give back", dispatcher.SettleParams{Action: dispatcher.ActionGiveBack}, job.Ready},
		{"delete", dispatcher.SettleParams{Action: dispatcher.ActionDelete}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic := "settle-" + strings.ReplaceAll(tc.name, " ", "-")
			if _, err := d.Push(ctx, job.Spec{Topic: topic, Body: "x", Priority: job.DefaultPriority, TTR: time.Minute}); err != nil {
				t.Fatal(err)
			}
			j, err := popOne(d, ctx, []string{topic}, 0)
			if err != nil || j == nil {
				t.Fatalf("pop: %v %v", j, err)
			}
			stale := tc.params
			stale.Ack = dispatcher.Ack{ID: j.PublicID(), Attempt: j.Attempt() + 1}
			if tc.params.Action != dispatcher.ActionDelete {
				if _, err := d.Settle(ctx, stale); !errors.Is(err, job.ErrStale) {
					t.Fatalf("a stale %s: %v, want stale", tc.name, err)
				}
			}
			p := tc.params
			p.Ack = dispatcher.Ack{ID: j.PublicID(), Attempt: j.Attempt()}
			if _, err := d.Settle(ctx, p); err != nil {
				t.Fatal(err)
			}
			got, err := d.Peek(ctx, j.PublicID())
			switch {
			case tc.state == 0 && !errors.Is(err, job.ErrNotFound):
				t.Errorf("after %s: %v %v, want gone", tc.name, got, err)
			case tc.state != 0 && (err != nil || got.State != tc.state):
				t.Errorf("after %s: %v %v, want %s", tc.name, got, err, tc.state)
			}
		})
	}
}

// TestSettleKickAndDeleteUnreserved: a buried job kicked by id is ready again, and a delete
// of an unreserved job removes it while a reserved one stays.
func TestSettleKickAndDeleteUnreserved(t *testing.T) {
	d := broker(t).Dispatcher
	ctx := context.Background()
	for _, body := range []string{"a", "b"} {
		if _, err := d.Push(ctx, job.Spec{Topic: "kd", Body: body, Priority: job.DefaultPriority, TTR: time.Minute}); err != nil {
			t.Fatal(err)
		}
	}
	held, err := popOne(d, ctx, []string{"kd"}, 0)
	if err != nil || held == nil {
		t.Fatalf("pop: %v %v", held, err)
	}
	byID := func(id string, a dispatcher.Action) error {
		_, err := d.Settle(ctx, dispatcher.SettleParams{Ack: dispatcher.Ack{ID: id}, Action: a, Priority: job.KeepPriority})
		return err
	}
	var state *job.StateError
	if err := byID(held.PublicID(), dispatcher.ActionDeleteUnreserved); !errors.As(err, &state) {
		t.Fatalf("a delete of a reserved job: %v, want a state error", err)
	}
	if _, err := d.Settle(ctx, dispatcher.SettleParams{Ack: dispatcher.Ack{ID: held.PublicID(), Attempt: held.Attempt()},
		Action: dispatcher.ActionBury, Priority: job.KeepPriority}); err != nil {
		t.Fatal(err)
	}
	if err := byID(held.PublicID(), dispatcher.ActionKick); err != nil {
		t.Fatal(err)
	}
	if got, err := d.Peek(ctx, held.PublicID()); err != nil || got.State != job.Ready {
		t.Fatalf("kicked: %v %v, want ready", got, err)
	}
	if err := byID(held.PublicID(), dispatcher.ActionDeleteUnreserved); err != nil {
		t.Fatal(err)
	}
	if err := byID(held.PublicID(), dispatcher.Action(200)); !errors.Is(err, job.ErrInvalid) {
		t.Fatalf("an unknown action: %v, want invalid", err)
	}
}
