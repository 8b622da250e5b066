package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// Acked says how a batch ack went: each job is acked on its own.
type Acked struct {
	IDs    []string  `json:"acked"`
	Failed []Failure `json:"failed"`
	Next   []Job     `json:"jobs"` // AckMany's next batch
	// Pushed are the follow-ups' ids of the jobs acked with FollowUps, by
	// acked id, each in its FollowUps' order: none for a job an earlier
	// ack completed (its follow-ups stand), nor for one a retry found
	// acked by an earlier try (see AckPush). Nil when none.
	Pushed map[string][]string `json:"pushed"`
}

// AckMany acks popped jobs (each fenced by its Token and Attempt, with its
// Result as its ack's result and its FollowUps as its follow-ups, when
// set) in one request and, with n > 0, pops up to n more as PopMany does:
// a batch consumer's round trip per batch. A bad follow-up fails the
// request as a whole (400, nothing acked), or, one gmq refuses at its ack
// (an ID, Unique), that job's ack alone (Failed).
//
// Acks answered 503 are sent again (Options.Retries times), alone; one that
// a retry finds gone (404) was acked by the earlier try. When the acks went
// through and the pop failed, only the pop is sent again. The error is the
// pop's, or the request's as a whole; each ack's own failure is in Failed.
func (c *Client) AckMany(ctx context.Context, jobs []Job, topics []string, n int, timeout time.Duration) (Acked, error) {
	res := Acked{IDs: []string{}, Failed: []Failure{}}
	pending, wantNext := jobs, n > 0
	for try := 0; ; try++ {
		if len(pending) == 0 {
			if wantNext { // the acks are done; only the pop is left
				next, err := c.PopMany(ctx, topics, n, timeout)
				res.Next = next
				return res, err
			}
			return res, nil
		}
		var next map[string]any
		var wait time.Duration
		if wantNext {
			next, wait = map[string]any{"topics": topics, "count": n, "timeout": timeout.Seconds()}, timeout
		}
		out, err := c.ackRound(ctx, pending, next, wait)
		e := asError(err)
		if err != nil && (e == nil || e.Status != http.StatusServiceUnavailable) {
			return res, err
		}
		if wantNext && err == nil {
			res.Next, wantNext = out.Next, false
		}
		pending = sortAcks(&res, pending, out, try)
		if len(pending) == 0 {
			continue
		}
		if e == nil { // the request went through; some of its acks answered 503
			e = &Error{Status: http.StatusServiceUnavailable, Message: out.Failed[0].Error}
		}
		if !c.retry(ctx, try, e) {
			for _, j := range pending {
				res.Failed = append(res.Failed, Failure{ID: j.ID, Status: e.Status, Error: e.Message})
			}
			return res, err
		}
	}
}

// ackRound sends one batch ack (with the next pop, when next is set). A 503
// answer comes with what it did, when it got as far as the acks: out.IDs
// and out.Failed are nil when it did not, as if every ack had answered 503.
func (c *Client) ackRound(ctx context.Context, jobs []Job, next map[string]any, wait time.Duration) (Acked, error) {
	type ack struct {
		ID      string          `json:"id"`
		Attempt int             `json:"attempt"`
		Token   string          `json:"token,omitempty"`
		Result  json.RawMessage `json:"result,omitempty"`
		Push    []Job           `json:"push,omitempty"`
	}
	acks := make([]ack, len(jobs))
	for i, j := range jobs {
		acks[i] = ack{j.ID, j.Attempt, j.Token, j.Result, j.FollowUps}
	}
	req := map[string]any{"jobs": acks}
	if next != nil {
		req["next"] = next
	}
	var out Acked
	body, err := json.Marshal(req)
	if err != nil {
		return out, fmt.Errorf("gmq: POST /api/v1/ack: encode request: %w", err)
	}
	data, err := c.try(ctx, http.MethodPost, "/api/v1/ack", body, wait)
	if err == nil {
		if err := json.Unmarshal(data, &out); err != nil {
			return out, fmt.Errorf("gmq: POST /api/v1/ack: decode answer: %w", err)
		}
		return out, nil
	}
	e := asError(err)
	if e == nil {
		return out, err
	}
	_ = json.Unmarshal(e.body, &out) // what it did before the failure, when it says
	if out.IDs == nil && out.Failed == nil {
		out.Failed = make([]Failure, len(jobs))
		for i, j := range jobs {
			out.Failed[i] = Failure{ID: j.ID, Status: e.Status, Error: e.Message}
		}
	}
	return out, err
}

// sortAcks adds a round's outcome (out, the answer to try number try about
// the jobs sent) to res, and returns the jobs to send again: those answered
// 503. A 404 to a retry is an ack an earlier try made.
func sortAcks(res *Acked, sent []Job, out Acked, try int) []Job {
	byID := make(map[string]Job, len(sent))
	for _, j := range sent {
		byID[j.ID] = j
	}
	res.IDs = append(res.IDs, out.IDs...)
	for id, ids := range out.Pushed {
		if res.Pushed == nil {
			res.Pushed = make(map[string][]string, len(out.Pushed))
		}
		res.Pushed[id] = ids
	}
	var again []Job
	for _, f := range out.Failed {
		switch {
		case f.Status == http.StatusServiceUnavailable:
			again = append(again, byID[f.ID])
		case f.Status == http.StatusNotFound && try > 0:
			res.IDs = append(res.IDs, f.ID)
		default:
			res.Failed = append(res.Failed, f)
		}
	}
	return again
}
