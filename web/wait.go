package web

import (
	"errors"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gmq/gmq/dispatcher"
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
