package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gmq/gmq/dispatcher"
	"github.com/gmq/gmq/internal/jobjson"
	"github.com/gmq/gmq/job"
)

// The actions on a popped job's delivery: ack (alone, with the next pop, in
// batches), release, bury and touch (fail is in failures.go). Each names
// its delivery by attempt or by the pop's token (dispatcher.Delivery).

// jobCall reads the optional arguments of a job action from the body or
// the query (?attempt=, ?token=: the query's win).
func (s *Server) jobCall(c *gin.Context, action string) (jobCall, error) {
	limit := int64(64 << 10)
	switch action {
	case "ack":
		limit = job.MaxResultLimit + 64<<10 + dispatcher.MaxFollowUps*s.pushLimit() // a result, follow-ups, and the rest
	case "progress":
		limit = job.MaxResultLimit + 64<<10 // a progress, and the rest
	}
	data, err := s.body(c, limit)
	if err != nil {
		return jobCall{}, err
	}
	call, err := parseJobCall(data, action, s.defaults())
	if err == nil && c.Query("attempt") != "" {
		call.Attempt, err = strconv.Atoi(c.Query("attempt"))
		if err != nil || call.Attempt < 0 {
			err = errors.Join(errBadRequest, errors.New("attempt must be a whole number"))
		}
	}
	if token, ok := c.GetQuery("token"); err == nil && ok {
		call.Token, err = jobjson.ParseToken(token)
	}
	return call, err
}

// settle does p's action to the path's job, at the delivery the call
// names: its attempt, or its token's (dispatcher.Settle).
func (s *Server) settle(ctx context.Context, c *gin.Context, call jobCall, p dispatcher.SettleParams) (*job.Job, error) {
	p.Ack = dispatcher.Ack{ID: c.Param("id"), Attempt: call.Attempt, Token: call.Token}
	return s.d.Settle(ctx, p)
}

// ack acks the job. With "next" it then answers like a pop: the next job
// (200) or nothing within the timeout (204), or with a count, like a batch
// pop; a failed ack pops nothing.
func (s *Server) ack(c *gin.Context) (int, any, error) {
	call, err := s.jobCall(c, "ack")
	if err != nil {
		return 0, nil, err
	}
	a := dispatcher.Ack{ID: c.Param("id"), Attempt: call.Attempt, Token: call.Token, Result: call.Result}
	if call.Next == nil {
		ctx, cancel := s.waiting(c, 0)
		defer cancel()
		var push *dispatcher.FollowUps
		if call.Push != nil {
			push = &dispatcher.FollowUps{Jobs: call.Push}
		}
		var kept time.Duration
		if _, err := s.d.Settle(ctx, dispatcher.SettleParams{Ack: a, Action: dispatcher.ActionAck, Push: push, Kept: &kept}); err != nil {
			return 0, nil, err
		}
		out := gin.H{"acked": a.ID}
		if kept > 0 { // kept completed, with its result (keep_results, keep_completed): for how long, seconds
			out["kept_for"] = seconds(kept)
		}
		if push != nil {
			out["pushed"] = followUpIDs(push)
			if push.Again {
				out["again"] = true // completed by an earlier ack, whose follow-ups stand
			}
		}
		return http.StatusOK, out, nil
	}
	if err := s.checkCount(call.Next.Count); err != nil {
		return 0, nil, err
	}
	ctx, cancel := s.waiting(c, call.Next.Timeout)
	defer cancel()
	next := *call.Next
	next.After = &a
	jobs, err := s.d.Pop(ctx, next)
	return popped(jobs, next.Count > 0, nil, err)
}

// followUpIDs are the ids an ack's follow-ups were given, as a push
// answers them (none when the job was completed by an earlier ack, whose
// follow-ups stand).
func followUpIDs(f *dispatcher.FollowUps) []string {
	ids := make([]string, len(f.Pushed))
	for i, p := range f.Pushed {
		ids[i] = job.PublicID(p.ClientID, p.ID)
	}
	return ids
}

// ackMany acks several jobs at once (a batch consumer's ack), each on its
// own: 200 with the ids acked and, for the others, why not. With "next" it
// then pops like a batch pop and adds "jobs" (empty when none came).
func (s *Server) ackMany(c *gin.Context) (int, any, error) {
	data, err := s.body(c, 1<<20+dispatcher.MaxFollowUps*s.pushLimit())
	if err != nil {
		return 0, nil, err
	}
	acks, pushes, next, err := parseAcks(data, s.opts.MaxBatch, s.defaults())
	if err == nil && next != nil && slices.ContainsFunc(pushes, func(p []job.Spec) bool { return p != nil }) {
		err = fmt.Errorf("%w: an ack with follow-ups (push) cannot pop the next jobs (next) in the same request: ack, then pop", errBadRequest)
	}
	if err == nil && next != nil {
		err = s.checkCount(next.Count)
	}
	if err != nil {
		return 0, nil, err
	}
	named := make(map[string]bool, len(acks))
	for _, a := range acks {
		if named[a.ID] { // settled at once, each on its own: two of one job would race
			return 0, nil, fmt.Errorf("%w: job %q is named twice in one ack", errBadRequest, a.ID)
		}
		named[a.ID] = true
	}
	settles := make([]dispatcher.SettleParams, len(acks))
	kept := make([]time.Duration, len(acks))
	for i, a := range acks {
		settles[i] = dispatcher.SettleParams{Ack: a, Action: dispatcher.ActionAck, Kept: &kept[i]}
		if pushes[i] != nil {
			settles[i].Push = &dispatcher.FollowUps{Jobs: pushes[i]}
		}
	}
	var jobs []*job.Job
	var errs []error
	if next == nil {
		ctx, cancel := s.waiting(c, 0)
		defer cancel()
		_, errs = s.d.SettleMany(ctx, settles)
	} else {
		ctx, cancel := s.waiting(c, next.Timeout)
		defer cancel()
		_, errs = s.d.SettleMany(ctx, settles)
		// Whichever acks failed, the pop follows; if it fails, the acks
		// that went through stand (AckedError).
		next.Count = max(next.Count, 1)
		if jobs, err = s.d.Pop(ctx, *next); err != nil {
			err = &job.AckedError{Err: err}
		}
	}
	acked := make([]string, 0, len(acks))
	failed := []gin.H{}
	pushed := gin.H{}  // acked id -> its follow-ups' ids
	keptFor := gin.H{} // acked id -> how long it is kept completed, seconds
	for i, err := range errs {
		switch {
		case err != nil:
			failed = append(failed, gin.H{"id": acks[i].ID, "status": statusOf(err), "error": publicMessage(err)})
		default:
			acked = append(acked, acks[i].ID)
			if f := settles[i].Push; f != nil {
				pushed[acks[i].ID] = followUpIDs(f)
			}
			if kept[i] > 0 {
				keptFor[acks[i].ID] = seconds(kept[i])
			}
		}
	}
	out := gin.H{"acked": acked, "failed": failed}
	if len(pushed) > 0 {
		out["pushed"] = pushed
	}
	if len(keptFor) > 0 {
		out["kept_for"] = keptFor
	}
	if next == nil {
		return http.StatusOK, out, nil
	}
	// A failed pop: the acks above stand; out says which went through, so
	// that only the pop is retried.
	return popped(jobs, true, out, err)
}

func (s *Server) release(c *gin.Context) (int, any, error) {
	call, err := s.jobCall(c, "release")
	if err != nil {
		return 0, nil, err
	}
	return answerJob(s.settle(c, c, call, dispatcher.SettleParams{Action: dispatcher.ActionRelease, Priority: call.Priority, Delay: call.Delay}))
}

func (s *Server) bury(c *gin.Context) (int, any, error) {
	call, err := s.jobCall(c, "bury")
	if err != nil {
		return 0, nil, err
	}
	return answerJob(s.settle(c, c, call, dispatcher.SettleParams{Action: dispatcher.ActionBury, Priority: call.Priority}))
}

func (s *Server) touch(c *gin.Context) (int, any, error) {
	call, err := s.jobCall(c, "touch")
	if err != nil {
		return 0, nil, err
	}
	return answerJob(s.settle(c, c, call, dispatcher.SettleParams{Action: dispatcher.ActionTouch}))
}
