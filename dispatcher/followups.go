package dispatcher

import (
	"context"
	"fmt"
	"time"

	"github.com/gmq/gmq/job"
)

// MaxFollowUps is the most follow-ups one ack may carry (an alias's copies
// counted each): they go in the ack's one script call.
const MaxFollowUps = 100

// FollowUps are the jobs an ack pushes once it succeeds (SettleParams.Push
// with ActionAck; docs/workflows.md): the ack and its follow-ups happen
// together or not at all, and each follow-up is pushed exactly once, by
// its bucket's timer, within moments of the ack.
type FollowUps struct {
	Jobs []job.Spec
	// Pushed is set by Settle: each job's id, in Jobs' order (an alias's
	// job: its first destination's copy's). None when Again.
	Pushed []job.Pushed
	// Again is set by Settle when the job was completed already, by an
	// earlier ack whose follow-ups stand: these were not pushed.
	Again bool
}

// ackPushing is Settle's ack of job id's delivery attempt, with result and follow-ups f.
func (d *Dispatcher) ackPushing(ctx context.Context, id string, attempt int, result string, f *FollowUps) error {
	if err := d.allow("push", writing); err != nil { // the follow-ups are pushes: refused whole, the job stays reserved
		return err
	}
	var specs []job.Spec
	var owner []int // owner[k]: the follow-up specs[k] came from
	for i, j := range f.Jobs {
		if err := d.validateFollowUp(j); err != nil {
			return fmt.Errorf("follow-up %d: %w", i, err)
		}
		dests, ok := d.alias(j.Topic)
		if !ok {
			dests = []string{j.Topic}
		}
		for _, dest := range dests {
			c := j
			c.Topic = dest
			specs, owner = append(specs, c), append(owner, i)
		}
	}
	if len(specs) > MaxFollowUps {
		return fmt.Errorf("%w: %d follow-ups (aliases' copies counted), at most %d an ack", job.ErrInvalid, len(specs), MaxFollowUps)
	}
	got, err := d.pool.AckPushing(ctx, id, attempt, result, specs)
	if err != nil {
		return err
	}
	if f.Again = got.Again; got.Again {
		return nil
	}
	f.Pushed = make([]job.Pushed, len(f.Jobs))
	for k, id := range got.IDs {
		if f.Pushed[owner[k]].ID == 0 {
			f.Pushed[owner[k]] = job.Pushed{ID: id}
		}
	}
	d.buckets[got.Bucket].Nudge(time.Now()) // its timer pushes them now
	return nil
}

// validateFollowUp checks a follow-up as a push is checked, and refuses
// what a follow-up cannot be: unique (each is made once by a unique key
// of its own), or named by an id of the client's (the ack answers its
// number).
func (d *Dispatcher) validateFollowUp(j job.Spec) error {
	if err := d.validate(j); err != nil {
		return err
	}
	if j.Unique != nil {
		return fmt.Errorf("%w: a follow-up cannot be unique: each is pushed once by a unique key of its own", job.ErrInvalid)
	}
	if j.ClientID != "" {
		return fmt.Errorf("%w: a follow-up cannot carry an id: the ack answers the number it is pushed under", job.ErrInvalid)
	}
	return nil
}
