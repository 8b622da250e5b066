package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Pushed is what Push did: the job it stored, or the waiting job a unique
// push changed instead.
type Pushed struct {
	ID string `json:"id"` // the job's id: its own ID, or gmq's number
	// InternalID is gmq's number for the job; 0 when a retry found the job
	// stored by an earlier try (see Push), whose answer was lost.
	InternalID uint64 `json:"internal_id"`
	// Unique is "" for a new job. For a push with Unique in mode replace or
	// debounce whose key a waiting job held, it is what the push did to that
	// job, UniqueReplaced or UniqueDebounced: ID names that job, and no new
	// job was made (the push's own ID is not used).
	Unique string `json:"unique,omitempty"`
}

// Push stores a job and says what it did.
//
// A retry after a 503 may find the job stored already: the 503 can come
// after the store (a request timeout, say). A job with an ID then gets a 409
// for its id, which Push takes as the job stored and returns its id with no
// error; the same 409 to a first try is a duplicate, returned as an error.
// A job without an ID has nothing to tell the two apart, and may be stored
// twice that way: give jobs IDs where that matters.
//
// A unique push (Job.Unique) whose key is held, in mode reject, is an
// *Error with Status 409 whose HeldBy names the job that holds the key.
// gmq checks a job's ID before its key, so the retries stay sound:
//   - With an ID, a retry whose first try stored the job gets the id's 409
//     (no HeldBy): stored, as above. A retry's 409 naming a holder is taken
//     as stored only when the holder is the job's own ID; any other holder
//     is returned as the error (Retried set). The first try may still have
//     stored the job if it was done and gone before the retry: gmq then
//     names it by its number, and the error is that 409, the job done once.
//   - Without an ID, a retry's 409 may name the job the first try stored:
//     the error has Retried set and HeldBy that job or another. Either way
//     the key was taken once and the push was not stored twice.
//   - In mode replace or debounce a retry changes again, with the same
//     body, delay and priority, the job its first try stored or changed
//     (without an ID, it answers UniqueReplaced or UniqueDebounced naming
//     the job the first try stored): no second job. But a job popped
//     between the tries (reserved, or done) is not changed: the retry
//     stores a fresh one, as any later push with the key would.
func (c *Client) Push(ctx context.Context, j Job) (Pushed, error) { return c.push(ctx, j, false) }

// push is Push; tried says an earlier request (a batch's) may have stored j,
// so that a 409 for its id means it is stored.
func (c *Client) push(ctx context.Context, j Job, tried bool) (Pushed, error) {
	var out Pushed
	err := c.call(ctx, http.MethodPost, "/api/v1/jobs", j, 0, &out)
	e := asError(err)
	if e == nil || e.Status != http.StatusConflict {
		return out, err
	}
	e.HeldBy = holder(e.body)
	// A 409 for a dependency that failed ("after: job N is dead", gmq's
	// pool/deps.go) says nothing of the job's own id.
	dependency := strings.Contains(e.Message, "after: job ")
	if j.ID != "" && (e.Retried || tried) && (e.HeldBy == "" || e.HeldBy == j.ID) && !dependency {
		return Pushed{ID: j.ID}, nil // an earlier try stored it
	}
	return Pushed{}, err
}

// holder is the "id" of a push's 409: the job that holds its unique key,
// "" in the 409 for a taken ID.
func holder(answer []byte) string {
	var held struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(answer, &held) != nil {
		return ""
	}
	return held.ID
}

// PushBatch stores several jobs, all or (on bad input) none, and returns their
// ids in order. On an error it returns the ids of the jobs stored before it.
//
// A 503 before any job was stored is retried as a whole. When every job has
// an ID, a 503 after part of the batch was stored, or a 409 to a retry, is
// carried on one job at a time as Push does, a 409 taken as the job stored
// (an earlier try stored it). Without IDs a partly stored batch is returned
// as an error with the ids stored, for the caller to push the rest.
//
// Jobs may carry Unique, each with a key of its own (a batch that repeats a
// key is refused, 400). A key held in mode reject fails the batch with a
// 409 once the other jobs are stored (their ids come back with it); gmq's
// answer to a batch names neither the holder nor what a replace or debounce
// did, so push a unique job with Push when you need to know.
func (c *Client) PushBatch(ctx context.Context, jobs []Job) ([]string, error) {
	var out struct {
		IDs []string `json:"ids"`
	}
	err := c.call(ctx, http.MethodPost, "/api/v1/jobs/batch", map[string]any{"jobs": jobs}, 0, &out)
	e := asError(err)
	if e == nil {
		return out.IDs, err
	}
	var failed struct {
		Stored []string `json:"stored_ids"`
	}
	_ = json.Unmarshal(e.body, &failed) // an answer without stored_ids stored none
	partly := e.Status == http.StatusServiceUnavailable && len(failed.Stored) > 0
	if !allHaveIDs(jobs) || !partly && !(e.Status == http.StatusConflict && e.Retried) {
		return failed.Stored, err
	}
	return c.pushRest(ctx, jobs, failed.Stored)
}

// pushRest pushes one by one the jobs of a batch (all with IDs) not among
// stored, the ids an answer said it stored.
func (c *Client) pushRest(ctx context.Context, jobs []Job, stored []string) ([]string, error) {
	done := make(map[string]bool, len(stored))
	for _, id := range stored {
		done[id] = true
	}
	ids := make([]string, 0, len(jobs))
	for i, j := range jobs {
		if done[j.ID] {
			ids = append(ids, j.ID)
			continue
		}
		p, err := c.push(ctx, j, true)
		if err != nil {
			for _, rest := range jobs[i+1:] {
				if done[rest.ID] {
					ids = append(ids, rest.ID)
				}
			}
			return ids, fmt.Errorf("gmq: job %d of the batch: %w", i, err)
		}
		ids = append(ids, p.ID) // a unique push's may be the job it changed
	}
	return ids, nil
}

func allHaveIDs(jobs []Job) bool {
	for _, j := range jobs {
		if j.ID == "" {
			return false
		}
	}
	return true
}

// Pop reserves a job from the first listed topic that has one, waiting up to
// timeout for one. It returns nil, nil when the time is up.
func (c *Client) Pop(ctx context.Context, topics []string, timeout time.Duration) (*Job, error) {
	var j Job
	err := c.call(ctx, http.MethodPost, "/api/v1/pop", map[string]any{"topics": topics, "timeout": timeout.Seconds()}, timeout, &j)
	return popped(&j, err)
}

// popped is the answer to a call that pops one job.
func popped(j *Job, err error) (*Job, error) {
	switch {
	case errors.Is(err, errNoContent):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return j, nil
}

// Ack finishes a popped job. attempt (the popped job's Attempt) fences the
// ack to that delivery; 0 acks whatever delivery is current. A retry after
// a 503 that finds the job gone (404) is taken as acked: the earlier try
// went through. AckResult acks with a result, AckPush with follow-ups too.
func (c *Client) Ack(ctx context.Context, id string, attempt int) error {
	_, err := c.ack(ctx, delivery{id: id, attempt: attempt}, nil, nil)
	return err
}

// AckAndPop acks a popped job and pops the next in the same request (one
// round trip per job for a consumer that works one job at a time). It
// returns nil, nil when no job came within timeout; if the ack fails,
// nothing was popped. When the ack went through and the pop failed (503),
// only the pop is tried again.
func (c *Client) AckAndPop(ctx context.Context, id string, attempt int, topics []string, timeout time.Duration) (*Job, error) {
	return c.ackAndPop(ctx, delivery{id: id, attempt: attempt}, nil, topics, timeout)
}

// ackAndPop acks d with result (nil: none) and pops the next job.
func (c *Client) ackAndPop(ctx context.Context, d delivery, result json.RawMessage, topics []string, timeout time.Duration) (*Job, error) {
	var j Job
	args := d.args()
	if result != nil {
		args["result"] = result
	}
	args["next"] = map[string]any{"topics": topics, "timeout": timeout.Seconds()}
	err := c.call(ctx, http.MethodPost, jobPath(d.id, "ack"), args, timeout, &j)
	if e := asError(err); e != nil && (partlyDone(e) || e.Retried && e.Status == http.StatusNotFound) {
		return c.Pop(ctx, topics, timeout)
	}
	return popped(&j, err)
}

// PopMany reserves up to n jobs in Pop's order, waiting up to timeout for
// the first; then it takes as many as are ready, up to n. It returns none,
// nil when the time is up.
func (c *Client) PopMany(ctx context.Context, topics []string, n int, timeout time.Duration) ([]Job, error) {
	var out struct {
		Jobs []Job `json:"jobs"`
	}
	err := c.call(ctx, http.MethodPost, "/api/v1/pop", map[string]any{"topics": topics, "count": n, "timeout": timeout.Seconds()}, timeout, &out)
	if errors.Is(err, errNoContent) {
		return nil, nil
	}
	return out.Jobs, err
}

// Failure is why one job of a batch call (AckMany, FailMany) was not done.
type Failure struct {
	ID     string `json:"id"`
	Status int    `json:"status"` // as Error.Status
	Error  string `json:"error"`
}

// Fail reports that a popped job failed, with why: it waits its retry
// policy's backoff, or goes to its topic's dead set past max_attempts. The
// answer is the job as it now is ("delayed" or "dead").
func (c *Client) Fail(ctx context.Context, id string, attempt int, reason string) (*Job, error) {
	return c.fail(ctx, delivery{id: id, attempt: attempt}, reason)
}

func (c *Client) fail(ctx context.Context, d delivery, reason string) (*Job, error) {
	var j Job
	args := d.args()
	args["error"] = reason
	if err := c.call(ctx, http.MethodPost, jobPath(d.id, "fail"), args, 0, &j); err != nil {
		return nil, err
	}
	return &j, nil
}

// Failed is FailMany's outcome: the jobs as they now are, and the failures
// that could not be recorded, each with its status and reason.
type Failed struct {
	Jobs   []Job     `json:"jobs"`
	Failed []Failure `json:"failed"`
}

// FailMany reports several failures at once, all with the same reason,
// each fenced by its job's Token and Attempt. A 503 to the whole request is
// retried; one job's own failure is in Failed.
func (c *Client) FailMany(ctx context.Context, jobs []Job, reason string) (Failed, error) {
	type fail struct {
		ID      string `json:"id"`
		Attempt int    `json:"attempt"`
		Token   string `json:"token,omitempty"`
		Error   string `json:"error"`
	}
	fails := make([]fail, len(jobs))
	for i, j := range jobs {
		fails[i] = fail{j.ID, j.Attempt, j.Token, reason}
	}
	var out Failed
	err := c.call(ctx, http.MethodPost, "/api/v1/fail", map[string]any{"jobs": fails}, 0, &out)
	return out, err
}

// Release gives a popped job back, ready again after delay. A nil priority
// keeps the job's.
func (c *Client) Release(ctx context.Context, id string, attempt int, priority *uint32, delay time.Duration) error {
	return c.release(ctx, delivery{id: id, attempt: attempt}, priority, delay)
}

func (c *Client) release(ctx context.Context, d delivery, priority *uint32, delay time.Duration) error {
	args := d.args()
	args["delay"] = delay.Seconds()
	if priority != nil {
		args["priority"] = *priority
	}
	return c.call(ctx, http.MethodPost, jobPath(d.id, "release"), args, 0, nil)
}

// Bury parks a popped job until it is kicked. A nil priority keeps the job's.
func (c *Client) Bury(ctx context.Context, id string, attempt int, priority *uint32) error {
	return c.bury(ctx, delivery{id: id, attempt: attempt}, priority)
}

func (c *Client) bury(ctx context.Context, d delivery, priority *uint32) error {
	args := d.args()
	if priority != nil {
		args["priority"] = *priority
	}
	return c.call(ctx, http.MethodPost, jobPath(d.id, "bury"), args, 0, nil)
}

// Touch gives a popped job a fresh TTR.
func (c *Client) Touch(ctx context.Context, id string, attempt int) error {
	return c.touch(ctx, delivery{id: id, attempt: attempt})
}

func (c *Client) touch(ctx context.Context, d delivery) error {
	return c.call(ctx, http.MethodPost, jobPath(d.id, "touch"), d.args(), 0, nil)
}

// Update is what Client.Update changes of a waiting job; a nil field stays.
type Update struct {
	Delay    *time.Duration // due this long from now (0: ready at once)
	Priority *uint32
	Body     *string // a new body, a string (even one whose text is JSON)
	// JSON, when not nil, is a new body as a JSON value (an object or an
	// array, as Job.JSON), in place of Body.
	JSON any
}

// Update changes a ready or delayed job's delay, priority or body (those u
// sets) in one step and returns the job as it now is. A reserved, buried or
// dead job is not changed: an *Error with Status 409.
func (c *Client) Update(ctx context.Context, id string, u Update) (*Job, error) {
	args := map[string]any{}
	if u.Delay != nil {
		args["delay"] = u.Delay.Seconds()
	}
	if u.Priority != nil {
		args["priority"] = *u.Priority
	}
	if u.Body != nil {
		args["body"] = *u.Body
	}
	if u.JSON != nil {
		args["body"] = u.JSON
	}
	var j Job
	if err := c.call(ctx, http.MethodPatch, "/api/v1/jobs/"+url.PathEscape(id), args, 0, &j); err != nil {
		return nil, err
	}
	return &j, nil
}

// Get returns a job as it now is, in whatever state: its LastError, its
// Failures, its Attempt.
func (c *Client) Get(ctx context.Context, id string) (*Job, error) {
	var j Job
	if err := c.call(ctx, http.MethodGet, "/api/v1/jobs/"+url.PathEscape(id), nil, 0, &j); err != nil {
		return nil, err
	}
	return &j, nil
}

func jobPath(id, action string) string {
	return "/api/v1/jobs/" + url.PathEscape(id) + "/" + action
}

// asError is err's *Error, or nil.
func asError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}
