package web

import (
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/gmq/gmq/job"
)

// push stores a job: 201 with its id. With ?wait=S it then waits up to S
// seconds for the job's end (request and response over the queue): 200 with
// how it ended (endView), or 202 with its id when it has not ended yet.
func (s *Server) push(c *gin.Context) (int, any, error) {
	wait, err := queryTimeout(c, "wait")
	if err != nil {
		return 0, nil, err
	}
	_, waits := c.GetQuery("wait")
	ctx, cancel := s.waiting(c, wait) // no wait: the request timeout
	defer cancel()
	if waits {
		if err := s.d.WaitRoom(); err != nil {
			return 0, nil, err // before the push: nothing stored
		}
	}
	data, err := s.body(c, s.pushLimit())
	if err != nil {
		return 0, nil, err
	}
	j, err := parsePush(data, s.defaults())
	if err != nil {
		return 0, nil, err
	}
	if j.TraceParent == "" { // the request's own trace context, as W3C's header
		j.TraceParent = c.GetHeader("traceparent")
	}
	got, err := s.d.Push(ctx, j)
	if err != nil {
		// A held unique key is refused here (409), naming the job that
		// holds it: the one job.Standing says stands for the push.
		if held, _ := job.Standing(got, err); held.Unique == job.UniqueHeld {
			return 0, gin.H{"id": job.PublicID(held.ClientID, held.ID), "internal_id": held.ID}, err
		}
		return 0, nil, err
	}
	id := job.PublicID(got.ClientID, got.ID)
	out := gin.H{"id": id, "internal_id": got.ID}
	if got.Unique != "" { // a waiting job with its key was changed: no job was made
		out["unique"] = got.Unique
	}
	if waits {
		end, err := s.d.WaitEnd(ctx, strconv.FormatUint(got.ID, 10), wait, true)
		if err != nil {
			return 0, out, err // the job was pushed: the answer names it
		}
		if end == nil { // not ended within the wait, or no room left to wait since the push: stored, say so
			return http.StatusAccepted, out, nil
		}
		return http.StatusOK, endView(id, end), nil
	}
	if got.Unique != "" {
		return http.StatusOK, out, nil
	}
	return http.StatusCreated, out, nil
}

func (s *Server) pushBatch(c *gin.Context) (int, any, error) {
	data, err := s.body(c, int64(s.opts.MaxBatch)*s.pushLimit())
	if err != nil {
		return 0, nil, err
	}
	jobs, err := parseBatch(data, s.defaults(), s.opts.MaxBatch)
	if err != nil {
		return 0, nil, err
	}
	pushed, err := s.d.PushBatch(c, jobs)
	ids := make([]string, 0, len(pushed))
	for _, p := range pushed {
		if p.ID != 0 { // a replaced or debounced job's own id for a unique push that changed it
			ids = append(ids, job.PublicID(p.ClientID, p.ID))
		}
	}
	if err != nil {
		// Say which jobs were stored before the failure, so a retry can skip them.
		return 0, gin.H{"stored_ids": ids}, err
	}
	return http.StatusCreated, gin.H{"ids": ids}, nil
}
