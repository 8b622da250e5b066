package gmqrpc

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/gmq/gmq/dispatcher"
	"github.com/gmq/gmq/internal/jobjson"
	"github.com/gmq/gmq/job"
)

// ProgressArgs report a reserved job's progress: {"id", "attempt",
// "token", "progress": any JSON value, "log": "a line"} (all but id
// optional), read as FailArgs are.
type ProgressArgs struct {
	ID       string
	Attempt  int
	Token    job.Delivery
	Progress string // a JSON value's compact text ("" none)
	Log      string
	err      error // returned by Progress, so the client gets it as the call's error
}

func (a *ProgressArgs) UnmarshalJSON(data []byte) error {
	f, err := jobjson.Decode(data)
	if err == nil {
		err = f.Only("Service.Progress", "id", "attempt", "token", "progress", "log")
	}
	if err == nil {
		a.ID, a.Attempt, a.Token, err = delivery(f)
	}
	if err == nil {
		a.Progress, err = f.JSONValue("progress")
	}
	if err == nil {
		a.Log, _, err = f.Str("log")
	}
	a.err = err
	return nil
}

// Progress records a reserved job's progress and a line of its log, and
// starts its TTR again as HTTP's progress does (docs/outcomes.md). The
// result is "success"; a job cancelled meanwhile is the error
// "cancelled: ...", and its consumer should stop.
func (s *Service) Progress(args ProgressArgs, reply *string) error {
	return coded(s.progress(args, reply))
}

func (s *Service) progress(args ProgressArgs, reply *string) error {
	if args.err != nil {
		return args.err
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.opts.RequestTimeout)
	defer cancel()
	a := dispatcher.Ack{ID: args.ID, Attempt: args.Attempt, Token: args.Token}
	if _, err := s.d.Settle(ctx, dispatcher.SettleParams{Ack: a, Action: dispatcher.ActionProgress, Progress: args.Progress, Log: args.Log}); err != nil {
		return inClientTerms("progress", args.ID, err)
	}
	*reply = "success"
	return nil
}

// CancelArgs name the job to cancel: its id as a string.
type CancelArgs struct{ ID string }

func (a *CancelArgs) UnmarshalJSON(data []byte) error { return json.Unmarshal(data, &a.ID) }

// Cancel cancels a job (docs/outcomes.md, Cancelling): the result is
// "cancelled" when it ended so at once, "cancelling" when its consumer
// holds it (it ends at the consumer's next touch, progress or ack).
func (s *Service) Cancel(args CancelArgs, reply *string) error { return coded(s.cancel(args, reply)) }

func (s *Service) cancel(args CancelArgs, reply *string) error {
	if args.ID == "" {
		return fmt.Errorf("%w: id is missing", jobjson.ErrBadRequest)
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.opts.RequestTimeout)
	defer cancel()
	j, err := s.d.Settle(ctx, dispatcher.SettleParams{Ack: dispatcher.Ack{ID: args.ID}, Action: dispatcher.ActionCancel})
	if err != nil {
		return inClientTerms("cancel", args.ID, err)
	}
	*reply = job.Cancelled.String()
	if j.State == job.Reserved {
		*reply = "cancelling"
	}
	return nil
}
