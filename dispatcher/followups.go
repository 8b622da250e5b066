package dispatcher

import (
	"context"
	"fmt"
	"time"

	"github.com/gmq/gmq/internal/jobjson"
	"github.com/gmq/gmq/job"
)

// MaxFollowUps is the most follow-ups one ack may carry, or one job in
// all its then and on_dead lists, nested ones too (an alias's copies
// counted each): they go in one script call.
const MaxFollowUps = jobjson.MaxFollowUps

// maxFollowUpDepth is how deep a job's follow-ups may nest (a then of a
// then...).
const maxFollowUpDepth = 8

// FollowUps are the jobs an ack pushes once it succeeds (SettleParams.Push
// with ActionAck; docs/workflows.md): the ack and its follow-ups happen
// together or not at all, and each follow-up is pushed exactly once, by
// the broker that acked before it answers (a bucket's timer after a grace,
// if that broker died).
type FollowUps struct {
	Jobs []job.Spec
	// Pushed is set by Settle: each job's id, in Jobs' order (an alias's
	// job: its first destination's copy's). None when Again.
	Pushed []job.Pushed
	// Again is set by Settle when the job was completed already, by an
	// earlier ack whose follow-ups stand: these were not pushed.
	Again bool
}

// ackPushing is Settle's ack of job id's delivery attempt, with result and
// follow-ups f; it says how long the job is kept completed (0: deleted, or
// completed by an earlier ack: Again).
func (d *Dispatcher) ackPushing(ctx context.Context, id string, attempt int, result string, f *FollowUps) (time.Duration, error) {
	if err := d.allow("push", writing); err != nil { // the follow-ups are pushes: refused whole, the job stays reserved
		return 0, fmt.Errorf("an ack with follow-ups is refused whole, its job still reserved (a plain ack is let through): %w", err)
	}
	for i, j := range f.Jobs {
		if err := d.validateFollowUp(j); err != nil {
			return 0, fmt.Errorf("push: job %d: %w", i, err)
		}
		if j.WithResult { // its body with the result: {"body": ..., "result": ...}, as it will be pushed
			body, err := job.WithResultBody(j.Body, j.BodyJSON, result)
			if err == nil && len(body) > d.opts.MaxBody {
				err = fmt.Errorf("%w: with_result, its body and the result are %d bytes, over max_body (%d)", job.ErrTooBig, len(body), d.opts.MaxBody)
			}
			if err != nil {
				return 0, fmt.Errorf("push: job %d: %w", i, err)
			}
		}
	}
	specs, owner := d.expandAliases(f.Jobs) // owner[k]: the follow-up specs[k] came from (nil: specs is f.Jobs)
	if len(specs) > MaxFollowUps {
		return 0, fmt.Errorf("%w: %d follow-ups (aliases' copies counted), at most %d an ack", job.ErrInvalid, len(specs), MaxFollowUps)
	}
	got, err := d.pool.AckPushing(ctx, id, attempt, result, specs)
	if err != nil {
		return 0, err
	}
	if f.Again = got.Again; got.Again {
		return 0, nil
	}
	f.Pushed = make([]job.Pushed, len(f.Jobs))
	for k, id := range got.IDs {
		i := k
		if owner != nil {
			i = owner[k]
		}
		if f.Pushed[i].ID == 0 {
			f.Pushed[i] = job.Pushed{ID: id}
		}
	}
	return got.Kept, nil
}

// validateFollowUp checks an ack's follow-up as a push is checked, and as
// followUpRules say.
func (d *Dispatcher) validateFollowUp(j job.Spec) error {
	if err := d.validateOne(j); err != nil {
		return err
	}
	if err := followUpRules(j); err != nil {
		return err
	}
	return d.validateNested(j)
}

// followUpRules are what a follow-up cannot be, where a push may: unique
// (each is pushed once by a unique key of its own), or named by an id of
// the client's (it is pushed under the number it was given).
func followUpRules(j job.Spec) error {
	if j.Unique != nil {
		return fmt.Errorf("%w: a follow-up cannot be unique: each is pushed once by a unique key of its own", job.ErrInvalid)
	}
	if j.ClientID != "" {
		return fmt.Errorf("%w: a follow-up cannot carry an id: it is pushed under the number it was given", job.ErrInvalid)
	}
	return nil
}

// validateNested checks a job's own follow-ups (Then, OnDead), nested ones
// too: each as a push is checked and as followUpRules say, none to an
// alias (they are pushed where they name), none on_dead with_result, at
// most maxFollowUpDepth deep and MaxFollowUps in all.
func (d *Dispatcher) validateNested(j job.Spec) error {
	count := 0
	var walk func(j job.Spec, depth int) error
	walk = func(j job.Spec, depth int) error {
		for _, list := range []struct {
			name string
			jobs []job.Spec
		}{{"then", j.Then}, {"on_dead", j.OnDead}} {
			for i, f := range list.jobs {
				if count++; count > MaxFollowUps {
					return fmt.Errorf("%w: more than %d follow-ups (then, on_dead, nested ones counted)", job.ErrInvalid, MaxFollowUps)
				}
				if depth >= maxFollowUpDepth {
					return fmt.Errorf("%w: follow-ups nested more than %d deep", job.ErrInvalid, maxFollowUpDepth)
				}
				err := d.validateOne(f)
				if _, alias := d.alias(f.Topic); err == nil && alias {
					err = fmt.Errorf("%w: %q is an alias: a job's own follow-up names one topic", job.ErrInvalid, f.Topic)
				}
				if err == nil {
					err = followUpRules(f)
				}
				if err == nil && f.WithResult && list.name == "on_dead" {
					err = fmt.Errorf("%w: with_result: a job that died has no result (its last error is on its view)", job.ErrInvalid)
				}
				if err == nil {
					err = walk(f, depth+1)
				}
				if err != nil {
					return fmt.Errorf("%s: job %d: %w", list.name, i, err)
				}
			}
		}
		return nil
	}
	return walk(j, 0)
}
