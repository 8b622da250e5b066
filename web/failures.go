package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gmq/gmq/dispatcher"
	"github.com/gmq/gmq/internal/jobjson"
	"github.com/gmq/gmq/job"
)

// fail reports a consumer's failure of a job: {"attempt": n, "token": "...",
// "error": "..."}.
// The answer is the job as it now is: delayed for its next attempt, or dead.
func (s *Server) fail(c *gin.Context) (int, any, error) {
	call, err := s.jobCall(c, "fail")
	if err != nil {
		return 0, nil, err
	}
	return answerJob(s.settle(c, c, call, dispatcher.SettleParams{Action: dispatcher.ActionFail, Reason: call.Error}))
}

// failMany reports several failures, each on its own:
// {"jobs": [{"id", "attempt", "token", "error"}, ...]} -> {"jobs": [the jobs as they
// now are], "failed": [{"id", "status", "error"}]}.
func (s *Server) failMany(c *gin.Context) (int, any, error) {
	data, err := s.body(c, 1<<20)
	if err != nil {
		return 0, nil, err
	}
	fails, err := parseFails(data, s.opts.MaxBatch)
	if err != nil {
		return 0, nil, err
	}
	jobs, errs := s.d.SettleMany(c, fails)
	views := []jobView{}
	failed := []gin.H{}
	for i, err := range errs {
		if err != nil {
			failed = append(failed, gin.H{"id": fails[i].ID, "status": statusOf(err), "error": publicMessage(err)})
		} else {
			views = append(views, viewJob(jobs[i]))
		}
	}
	return http.StatusOK, gin.H{"jobs": views, "failed": failed}, nil
}

// parseFails reads a batch of failures, as parseAcks reads acks, with each
// one's "error".
func parseFails(data []byte, limit int) ([]dispatcher.SettleParams, error) {
	_, items, err := jobsArray(data, limit, "a fail", `{"id": ..., "attempt": n, "token": "...", "error": "..."}`, "jobs")
	if err != nil {
		return nil, err
	}
	out := make([]dispatcher.SettleParams, len(items))
	for i, item := range items {
		jf, err := jobjson.Decode(item)
		var a ackItem
		if err == nil {
			err = jf.Only("a failed job", "id", "attempt", "token", "error")
		}
		if err == nil {
			a, err = parseAckItem(jf)
		}
		var reason string
		if err == nil {
			reason, _, err = jf.Str("error")
		}
		if err != nil {
			return nil, fmt.Errorf("job %d: %w", i, err)
		}
		out[i] = dispatcher.SettleParams{Ack: a, Action: dispatcher.ActionFail, Reason: reason}
	}
	return out, nil
}

// dead lists a topic's dead jobs, oldest death first (job_list.lua on the
// dead set), with their failures and each one's error: ?offset=&limit=
// (default 100, at most 1000: parsePage).
func (s *Server) dead(c *gin.Context) (int, any, error) {
	return s.ended(c, job.Dead, func(d *job.Job) gin.H {
		v := gin.H{"failures": d.Failures, "last_error": d.LastError, "dead_at": d.DeadAt.UTC().Format(time.RFC3339Nano)}
		if errs := viewErrors(d.Errors); errs != nil {
			v["errors"] = errs
		}
		return v
	})
}

// completed lists a topic's completed jobs, newest first, with their
// results: ?offset=&limit= (default 100, at most 1000).
func (s *Server) completed(c *gin.Context) (int, any, error) {
	return s.ended(c, job.Completed, func(d *job.Job) gin.H {
		v := gin.H{"completed_at": d.EndedAt.UTC().Format(time.RFC3339Nano), "attempt": d.Attempt()}
		if d.Result != "" {
			v["result"] = json.RawMessage(d.Result)
		}
		return v
	})
}

// cancelled lists a topic's cancelled jobs, newest first, with their last
// progress: ?offset=&limit= (default 100, at most 1000).
func (s *Server) cancelled(c *gin.Context) (int, any, error) {
	return s.ended(c, job.Cancelled, func(d *job.Job) gin.H {
		v := gin.H{"cancelled_at": d.EndedAt.UTC().Format(time.RFC3339Nano), "attempt": d.Attempt()}
		if d.Progress != "" {
			v["progress"] = json.RawMessage(d.Progress)
		}
		return v
	})
}

// ended answers a page of a topic's jobs in an end state (dead, completed),
// each its id, priority and body preview with what state adds.
func (s *Server) ended(c *gin.Context, state job.State, add func(*job.Job) gin.H) (int, any, error) {
	p, err := parsePage(c.Query("offset"), c.Query("limit"), 100, 1000)
	if err != nil {
		return 0, nil, err
	}
	list, total, err := s.d.Topic(c.Param("topic")).Jobs(c, state, p.offset, p.limit)
	if err != nil {
		return 0, nil, err
	}
	views := make([]gin.H, len(list))
	for i, d := range list {
		v := add(d)
		v["id"], v["internal_id"], v["priority"], v["body_preview"] = d.PublicID(), d.ID, d.Priority, job.BodyValue(d.Body, d.BodyJSON)
		views[i] = v
	}
	return http.StatusOK, gin.H{"topic": c.Param("topic"), "total": total, "offset": p.offset, "jobs": views}, nil
}

// retryEnded answers POST .../dead/retry and .../completed/retry: the
// jobs of that state made ready again ({"ids": [...]}, or no body for all
// of them) -> {"retried": n}.
func (s *Server) retryEnded(state job.State) func(*gin.Context) (int, any, error) {
	return func(c *gin.Context) (int, any, error) {
		f, err := s.onlyFields(c, "a "+state.String()+"-job retry", "ids")
		if err != nil {
			return 0, nil, err
		}
		var ids []string
		if raw, ok := f["ids"]; ok {
			if err := json.Unmarshal(raw, &ids); err != nil || len(ids) == 0 {
				return 0, nil, fmt.Errorf("%w: ids must be a non-empty array of job ids (strings); leave it out to retry them all", errBadRequest)
			}
		}
		n, err := s.d.Topic(c.Param("topic")).Retry(c, state, ids)
		if err != nil {
			return 0, gin.H{"retried": n}, err
		}
		return http.StatusOK, gin.H{"retried": n}, nil
	}
}

// deleteEnded answers DELETE .../dead and .../completed: that set emptied
// -> {"deleted": n}.
func (s *Server) deleteEnded(state job.State) func(*gin.Context) (int, any, error) {
	return func(c *gin.Context) (int, any, error) {
		n, err := s.d.Topic(c.Param("topic")).Purge(c, dispatcher.PurgeParams{States: []job.State{state}})
		if err != nil {
			return 0, gin.H{"deleted": n}, err
		}
		return http.StatusOK, gin.H{"deleted": n}, nil
	}
}

// purge removes a topic's jobs in the states named:
// {"states": ["ready", "delayed", "buried", "dead", "completed"], "force": false}
// ("reserved" only with force) -> {"purged": n}.
func (s *Server) purge(c *gin.Context) (int, any, error) {
	f, err := s.onlyFields(c, "a purge", "states", "force")
	if err != nil {
		return 0, nil, err
	}
	var names []string
	if raw, ok := f["states"]; !ok {
		return 0, nil, fmt.Errorf("%w: states is missing", errBadRequest)
	} else if err := json.Unmarshal(raw, &names); err != nil || len(names) == 0 {
		return 0, nil, fmt.Errorf("%w: states must be a non-empty array of ready, delayed, reserved, buried, dead, completed, cancelled", errBadRequest)
	}
	states := make([]job.State, 0, len(names))
	for _, name := range names {
		st, ok := job.ParseState(name)
		if !ok {
			return 0, nil, fmt.Errorf("%w: unknown state %q (ready, delayed, reserved, buried, dead, completed, cancelled)", errBadRequest, name)
		}
		states = append(states, st)
	}
	force := false
	if raw, ok := f["force"]; ok {
		if err := json.Unmarshal(raw, &force); err != nil {
			return 0, nil, fmt.Errorf("%w: force must be true or false", errBadRequest)
		}
	}
	n, err := s.d.Topic(c.Param("topic")).Purge(c, dispatcher.PurgeParams{States: states, EvenReserved: force})
	if err != nil {
		return 0, gin.H{"purged": n}, err
	}
	return http.StatusOK, gin.H{"purged": n}, nil
}

// listJobs answers a page of a topic's jobs in one state:
// ?state=ready|delayed|reserved|buried|dead|completed|cancelled (default ready)&offset=&limit=
// (default 50, at most 500), bodies cut to their first 200 bytes.
func (s *Server) listJobs(c *gin.Context) (int, any, error) {
	name := c.DefaultQuery("state", "ready")
	st, ok := job.ParseState(name)
	if !ok {
		return 0, nil, fmt.Errorf("%w: state must be ready, delayed, reserved, buried, dead, completed or cancelled, got %q", errBadRequest, name)
	}
	p, err := parsePage(c.Query("offset"), c.Query("limit"), 50, 500)
	if err != nil {
		return 0, nil, err
	}
	list, total, err := s.d.Topic(c.Param("topic")).Jobs(c, st, p.offset, p.limit)
	if err != nil {
		return 0, nil, err
	}
	views := make([]jobView, len(list))
	for i, j := range list {
		views[i] = viewJob(j)
	}
	return http.StatusOK, gin.H{"topic": c.Param("topic"), "state": name, "total": total, "offset": p.offset, "jobs": views}, nil
}
