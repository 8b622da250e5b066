// Package client is a Go client for gmq's HTTP API: push, push-batch, pop
// with long polling, batch pop, ack, batch ack, release, bury and touch. It holds no state beyond
// an http.Client, and is safe for concurrent use.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Job is a job to push, or one popped.
type Job struct {
	ID       string  `json:"id,omitempty"` // optional on push: gmq numbers jobs without one
	Topic    string  `json:"topic"`
	Body     string  `json:"body"`
	Delay    float64 `json:"delay,omitempty"` // seconds
	TTR      float64 `json:"TTR,omitempty"`   // seconds; the server's default when 0 on push
	Priority *uint32 `json:"priority,omitempty"`
	Retry    *Retry  `json:"retry,omitempty"` // the job's own retry policy; nil: its topic's

	// Set on popped jobs.
	State    string     `json:"state,omitempty"`
	Created  time.Time  `json:"created,omitzero"`
	Due      *time.Time `json:"due,omitempty"`     // when a reservation's TTR runs out (Redis's clock)
	Attempt  int        `json:"attempt,omitempty"` // pass it back to Ack, Release, Bury, Touch
	Reserves int        `json:"reserves,omitempty"`
	Timeouts int        `json:"timeouts,omitempty"`
	// Failures is how many times consumers failed it; LastError the last reason.
	Failures  int    `json:"failures,omitempty"`
	LastError string `json:"last_error,omitempty"`
}

// Retry is a job's own retry policy; what it leaves out (nil, "" or 0) is
// its topic's. Base and Max are seconds.
type Retry struct {
	MaxAttempts *int    `json:"max_attempts,omitempty"` // 0: for ever
	Backoff     string  `json:"backoff,omitempty"`      // "fixed", "linear" or "exponential"
	Base        float64 `json:"base,omitempty"`
	Max         float64 `json:"max,omitempty"`
	Jitter      *bool   `json:"jitter,omitempty"`
}

// Priority returns a pointer for Job.Priority.
func Priority(p uint32) *uint32 { return &p }

// Error is an answer from gmq that is not a success.
type Error struct {
	Status  int    // HTTP status: 400 bad input, 404 unknown, 409 conflict, 413 too big, 503 Redis down
	Message string // gmq's reason
}

func (e *Error) Error() string { return fmt.Sprintf("gmq: %d: %s", e.Status, e.Message) }

// IsNotFound reports whether err is gmq's 404.
func IsNotFound(err error) bool { return status(err) == http.StatusNotFound }

// IsConflict reports whether err is gmq's 409 (duplicate id, stale delivery, wrong state).
func IsConflict(err error) bool { return status(err) == http.StatusConflict }

func status(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// Client talks to one gmq.
type Client struct {
	base string
	http *http.Client
}

// New returns a client for the gmq at baseURL (e.g. "http://127.0.0.1:8000").
// A nil httpClient uses one without an overall timeout, so long polls work;
// bound calls with their contexts.
func New(baseURL string, httpClient *http.Client) *Client {
	if httpClient == nil {
		httpClient = &http.Client{}
	}
	return &Client{base: strings.TrimRight(baseURL, "/"), http: httpClient}
}

// Push stores a job and returns its id.
func (c *Client) Push(ctx context.Context, j Job) (string, error) {
	var out struct {
		ID string `json:"id"`
	}
	err := c.call(ctx, http.MethodPost, "/api/v1/jobs", j, &out)
	return out.ID, err
}

// PushBatch stores several jobs, all or (on bad input) none, and returns their ids.
func (c *Client) PushBatch(ctx context.Context, jobs []Job) ([]string, error) {
	var out struct {
		IDs []string `json:"ids"`
	}
	err := c.call(ctx, http.MethodPost, "/api/v1/jobs/batch", map[string]any{"jobs": jobs}, &out)
	return out.IDs, err
}

// Pop reserves a job from the first listed topic that has one, waiting up to
// timeout for one. It returns nil, nil when the time is up.
func (c *Client) Pop(ctx context.Context, topics []string, timeout time.Duration) (*Job, error) {
	var j Job
	err := c.call(ctx, http.MethodPost, "/api/v1/pop", map[string]any{"topics": topics, "timeout": timeout.Seconds()}, &j)
	if errors.Is(err, errNoContent) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &j, nil
}

// Ack finishes a popped job. attempt (the popped job's Attempt) fences the
// ack to that delivery; 0 acks whatever delivery is current.
func (c *Client) Ack(ctx context.Context, id string, attempt int) error {
	return c.call(ctx, http.MethodPost, jobPath(id, "ack"), map[string]any{"attempt": attempt}, nil)
}

// AckAndPop acks a popped job and pops the next in the same request (one
// round trip per job for a consumer that works one job at a time). It
// returns nil, nil when no job came within timeout; if the ack fails,
// nothing was popped.
func (c *Client) AckAndPop(ctx context.Context, id string, attempt int, topics []string, timeout time.Duration) (*Job, error) {
	var j Job
	err := c.call(ctx, http.MethodPost, jobPath(id, "ack"), map[string]any{"attempt": attempt,
		"next": map[string]any{"topics": topics, "timeout": timeout.Seconds()}}, &j)
	if errors.Is(err, errNoContent) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &j, nil
}

// PopMany reserves up to n jobs in Pop's order, waiting up to timeout for
// the first; then it takes as many as are ready, up to n. It returns none,
// nil when the time is up.
func (c *Client) PopMany(ctx context.Context, topics []string, n int, timeout time.Duration) ([]Job, error) {
	var out struct {
		Jobs []Job `json:"jobs"`
	}
	err := c.call(ctx, http.MethodPost, "/api/v1/pop", map[string]any{"topics": topics, "count": n, "timeout": timeout.Seconds()}, &out)
	if errors.Is(err, errNoContent) {
		return nil, nil
	}
	return out.Jobs, err
}

// Acked says how a batch ack went: each job is acked on its own.
type Acked struct {
	IDs    []string `json:"acked"`
	Failed []struct {
		ID     string `json:"id"`
		Status int    `json:"status"` // as Error.Status
		Error  string `json:"error"`
	} `json:"failed"`
	Next []Job `json:"jobs"` // AckMany's next batch
}

// AckMany acks popped jobs (each fenced by its Attempt) in one request and,
// with n > 0, pops up to n more as PopMany does: a batch consumer's round
// trip per batch.
func (c *Client) AckMany(ctx context.Context, jobs []Job, topics []string, n int, timeout time.Duration) (Acked, error) {
	type ack struct {
		ID      string `json:"id"`
		Attempt int    `json:"attempt"`
	}
	acks := make([]ack, len(jobs))
	for i, j := range jobs {
		acks[i] = ack{j.ID, j.Attempt}
	}
	req := map[string]any{"jobs": acks}
	if n > 0 {
		req["next"] = map[string]any{"topics": topics, "count": n, "timeout": timeout.Seconds()}
	}
	var out Acked
	err := c.call(ctx, http.MethodPost, "/api/v1/ack", req, &out)
	return out, err
}

// Fail reports that a popped job failed, with why: it waits its retry
// policy's backoff, or goes to its topic's dead set past max_attempts. The
// answer is the job as it now is ("delayed" or "dead").
func (c *Client) Fail(ctx context.Context, id string, attempt int, reason string) (*Job, error) {
	var j Job
	if err := c.call(ctx, http.MethodPost, jobPath(id, "fail"), map[string]any{"attempt": attempt, "error": reason}, &j); err != nil {
		return nil, err
	}
	return &j, nil
}

// Failed is FailMany's outcome: the jobs as they now are, and the failures
// that could not be recorded, each with its status and reason.
type Failed struct {
	Jobs   []Job `json:"jobs"`
	Failed []struct {
		ID     string `json:"id"`
		Status int    `json:"status"`
		Error  string `json:"error"`
	} `json:"failed"`
}

// FailMany reports several failures at once, all with the same reason.
func (c *Client) FailMany(ctx context.Context, jobs []Job, reason string) (Failed, error) {
	type fail struct {
		ID      string `json:"id"`
		Attempt int    `json:"attempt"`
		Error   string `json:"error"`
	}
	fails := make([]fail, len(jobs))
	for i, j := range jobs {
		fails[i] = fail{j.ID, j.Attempt, reason}
	}
	var out Failed
	err := c.call(ctx, http.MethodPost, "/api/v1/fail", map[string]any{"jobs": fails}, &out)
	return out, err
}

// Release gives a popped job back, ready again after delay. A nil priority
// keeps the job's.
func (c *Client) Release(ctx context.Context, id string, attempt int, priority *uint32, delay time.Duration) error {
	args := map[string]any{"attempt": attempt, "delay": delay.Seconds()}
	if priority != nil {
		args["priority"] = *priority
	}
	return c.call(ctx, http.MethodPost, jobPath(id, "release"), args, nil)
}

// Bury parks a popped job until it is kicked. A nil priority keeps the job's.
func (c *Client) Bury(ctx context.Context, id string, attempt int, priority *uint32) error {
	args := map[string]any{"attempt": attempt}
	if priority != nil {
		args["priority"] = *priority
	}
	return c.call(ctx, http.MethodPost, jobPath(id, "bury"), args, nil)
}

// Touch gives a popped job a fresh TTR.
func (c *Client) Touch(ctx context.Context, id string, attempt int) error {
	return c.call(ctx, http.MethodPost, jobPath(id, "touch"), map[string]any{"attempt": attempt}, nil)
}

func jobPath(id, action string) string {
	return "/api/v1/jobs/" + url.PathEscape(id) + "/" + action
}

var errNoContent = errors.New("no content")

func (c *Client) call(ctx context.Context, method, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("gmq: encode request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("gmq: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("gmq: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("gmq: read answer: %w", err)
	}
	switch {
	case resp.StatusCode == http.StatusNoContent:
		return errNoContent
	case resp.StatusCode >= 300:
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(data, &e) != nil || e.Error == "" {
			e.Error = strings.TrimSpace(string(data))
		}
		return &Error{Status: resp.StatusCode, Message: e.Error}
	case out != nil:
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("gmq: decode answer: %w", err)
		}
	}
	return nil
}
