package web

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gmq/gmq/dispatcher"
	"github.com/gmq/gmq/job"
)

// queryTimeout reads a wait from ?name= in seconds (0 when absent), cut
// to the longest a duration holds (the dispatcher caps it at
// max_pop_timeout).
func queryTimeout(c *gin.Context, name string) (time.Duration, error) {
	t := c.Query(name)
	if t == "" {
		return 0, nil
	}
	secs, err := strconv.ParseFloat(t, 64)
	if err != nil || secs < 0 || math.IsNaN(secs) || math.IsInf(secs, 0) {
		return 0, errors.Join(errBadRequest, errors.New(name+" must be a number of seconds, got "+strconv.Quote(t)))
	}
	return time.Duration(min(secs, maxSeconds) * float64(time.Second)), nil
}

// waitEnd answers GET /api/v1/jobs/:id/wait?timeout=S: 200 with how the
// job ended as soon as it does (answerEnd), 204 when it has not within S
// seconds. A long poll: its deadline is S plus the request timeout, and it
// counts in max_waiting.
func (s *Server) waitEnd(c *gin.Context) (int, any, error) {
	timeout, err := queryTimeout(c, "timeout")
	if err != nil {
		return 0, nil, err
	}
	ctx, cancel := s.waiting(c, timeout)
	defer cancel()
	end, err := s.d.WaitEnd(ctx, c.Param("id"), timeout, false)
	if err != nil {
		return 0, nil, err
	}
	if end == nil {
		return http.StatusNoContent, nil, nil
	}
	return http.StatusOK, endView(c.Param("id"), end), nil
}

// endView is how a job ended: the job itself when it is kept (completed,
// with its result; dead, with its last error), else its id and how it
// went ("acked", "deleted", "expired", "taken", "discarded", "gone").
func endView(id string, end *dispatcher.End) any {
	if end.Job != nil {
		return viewJob(end.Job)
	}
	return gin.H{"id": id, "state": end.How}
}

// cancel answers POST /api/v1/jobs/:id/cancel: 200 with the job ended
// cancelled (endView: the job when it is kept, else its id and state),
// or, for a job a consumer holds, 202 with the job marked cancelling (its
// consumer's next touch, progress or ack ends it, answered 410).
func (s *Server) cancel(c *gin.Context) (int, any, error) {
	if f, err := s.fields(c); err != nil { // none, or {} (gmq cancel sends one)
		return 0, nil, err
	} else if len(f) > 0 {
		return 0, nil, fmt.Errorf("%w: a cancel takes no fields", errBadRequest)
	}
	j, err := s.d.Settle(c, dispatcher.SettleParams{Ack: dispatcher.Ack{ID: c.Param("id")}, Action: dispatcher.ActionCancel})
	if err != nil {
		return 0, nil, err
	}
	switch j.State {
	case job.Reserved:
		return http.StatusAccepted, viewJob(j), nil
	case job.Gone: // cancelled, and not kept
		return http.StatusOK, gin.H{"id": j.PublicID(), "state": job.Cancelled.String()}, nil
	}
	return http.StatusOK, viewJob(j), nil
}

// progress answers POST /api/v1/jobs/:id/progress {"attempt", "token",
// "progress": any JSON value, "log": "a line"}: the job with its progress
// and log, its TTR started again as a touch does; 410 when it was
// cancelled meanwhile (the consumer should stop: the job has ended).
func (s *Server) progress(c *gin.Context) (int, any, error) {
	call, err := s.jobCall(c, "progress")
	if err != nil {
		return 0, nil, err
	}
	return answerJob(s.settle(c, c, call, dispatcher.SettleParams{Action: dispatcher.ActionProgress,
		Progress: call.Progress, Log: call.Log}))
}
