package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// ErrCancelled is the cause of a Work handler's cancelled context when its
// job was cancelled (Cancel) while the handler ran: the worker's touch, or
// the handler's own Progress, was answered 410. The job has ended,
// cancelled: Work neither acks nor fails it, and logs it. An *Error of
// status 410 matches it too (errors.Is), as does what Work's handler
// returns after such a Progress.
var ErrCancelled = errors.New("gmq: the job was cancelled")

// handling is what a Work handler's context carries about its job, so that
// Progress given that context stops the handler when the job was cancelled.
type handling struct {
	id      string
	attempt int
	stop    context.CancelCauseFunc
}

type handlingKey struct{}

// Progress reports how far a popped job has got: progress (any value
// encoding/json encodes; nil: the last one given stays) and line, a line
// for the job's log ("": none). Either may be left out. gmq keeps the last
// progress and the topic's max_log lines of the log (each cut to 1 KiB)
// with the job, which Get shows (Job.Progress, Job.Log), and starts the
// job's TTR again as a touch does. It returns the job as it now is.
//
// It is fenced by j's Token and Attempt, as AckJob is (another delivery's
// progress is a 409). A job cancelled while it is reserved answers 410
// (IsCancelled; errors.Is(err, ErrCancelled)): the job has ended, and its
// consumer should stop its work and neither ack nor fail it. Given the
// context of a Work handler of j, that 410 also cancels the context, with
// cause ErrCancelled. A progress larger than the topic's max_result is a
// 413; one encoding/json refuses is an error before any request. A retry
// after a 503 may log the line twice.
func (c *Client) Progress(ctx context.Context, j *Job, progress any, line string) (*Job, error) {
	args := deliveryOf(j).args()
	if progress != nil {
		data, err := json.Marshal(progress)
		if err != nil {
			return nil, fmt.Errorf("gmq: the job's progress: %w", err)
		}
		if string(data) != "null" {
			args["progress"] = json.RawMessage(data)
		}
	}
	if line != "" {
		args["log"] = line
	}
	var out Job
	err := c.call(ctx, http.MethodPost, jobPath(j.ID, "progress"), args, 0, &out)
	if IsCancelled(err) {
		if h, ok := ctx.Value(handlingKey{}).(*handling); ok && h.id == j.ID && h.attempt == j.Attempt {
			h.stop(fmt.Errorf("%w: progress: %w", ErrCancelled, err))
		}
	}
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// Cancel ends a job that should not run, and returns it as it now is:
//   - waiting (delayed, ready or buried): it ends at once, State
//     "cancelled", kept as a completed job would be (its KeepCompleted, or
//     its topic's keep_completed; then Get and WaitEnd show it), or, where
//     nothing keeps it, removed (the Job has only its ID and State);
//   - reserved: it is marked, State "reserved" with Cancelling set, and
//     ends cancelled at its consumer's next touch, Progress, ack, release,
//     bury or fail, which answers 410 (a Work handler's context is then
//     cancelled with cause ErrCancelled), or when its TTR runs out.
//
// An ended job (completed, dead, cancelled) is a 409; an unknown one a 404.
// A retry after a 503 may get either for a job the earlier try cancelled.
func (c *Client) Cancel(ctx context.Context, id string) (*Job, error) {
	var j Job
	if err := c.call(ctx, http.MethodPost, jobPath(id, "cancel"), nil, 0, &j); err != nil {
		return nil, err
	}
	return &j, nil
}

// WaitEnd waits up to timeout (gmq caps it at its max_pop_timeout, 60 s by
// default) for job id to end, and returns how it ended, or nil, nil when it
// has not within timeout (0: a look). A job kept after its end comes back
// whole: State "completed" with its Result, "dead" with its LastError, or
// "cancelled". One that is not kept has only its ID and State: "acked",
// "deleted", "expired", "taken", "discarded", or "gone" (it ended while no
// broker could hear how). A job unknown to gmq (never pushed, or ended
// before the wait and not kept) is a 404 (IsNotFound).
func (c *Client) WaitEnd(ctx context.Context, id string, timeout time.Duration) (*Job, error) {
	var j Job
	path := "/api/v1/jobs/" + url.PathEscape(id) + "/wait?timeout=" + seconds(timeout)
	err := c.call(ctx, http.MethodGet, path, nil, timeout, &j)
	if errors.Is(err, errNoContent) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &j, nil
}

// PushAndWait pushes j as Push does, then waits up to wait for its end in
// the same request: request and response over the queue. It returns what
// the push stored (Pushed), and how the job ended as WaitEnd says, or a nil
// *Job when it has not ended within wait (wait again with WaitEnd, by the
// Pushed ID). A job that ended and is not kept comes back with its ID and
// State alone ("acked"...), or "gone" when it ended before the wait began.
//
// Its retries are Push's: a retry whose 409 says an earlier try stored the
// job (a job with an ID) waits for it with WaitEnd. When the push went
// through and the wait failed (too many waiting, 429; a 503), the error
// comes with the Pushed that names the job, and nothing is sent again.
func (c *Client) PushAndWait(ctx context.Context, j Job, wait time.Duration) (Pushed, *Job, error) {
	var raw json.RawMessage
	err := c.call(ctx, http.MethodPost, "/api/v1/jobs?wait="+seconds(wait), j, wait, &raw)
	if e := asError(err); e != nil {
		held := holder(e.body)
		switch {
		case e.Status == http.StatusConflict:
			e.HeldBy = held
			if j.ID != "" && e.Retried && (held == "" || held == j.ID) { // an earlier try stored it
				end, err := c.WaitEnd(ctx, j.ID, wait)
				return Pushed{ID: j.ID}, end, err
			}
		case held != "": // stored; the wait failed
			var p Pushed
			_ = json.Unmarshal(e.body, &p) // held says it has the id
			return p, nil, err
		}
		return Pushed{}, nil, err
	}
	if err != nil {
		return Pushed{}, nil, err
	}
	var answer struct {
		Pushed
		State string `json:"state"`
	}
	if err := json.Unmarshal(raw, &answer); err != nil {
		return Pushed{}, nil, fmt.Errorf("gmq: POST /api/v1/jobs: decode answer: %w", err)
	}
	if answer.State == "" { // 202: not ended within wait
		return answer.Pushed, nil, nil
	}
	var end Job
	if err := json.Unmarshal(raw, &end); err != nil {
		return Pushed{}, nil, fmt.Errorf("gmq: POST /api/v1/jobs: decode answer: %w", err)
	}
	return Pushed{ID: answer.ID, InternalID: answer.InternalID}, &end, nil
}

// seconds is d as a query's number of seconds.
func seconds(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) }
