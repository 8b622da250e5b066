package client

import (
	"context"
	"encoding/json"
	"net/http"
)

// Follow-ups (gmq's docs/workflows.md): an ack may carry jobs that gmq
// pushes once the ack succeeds, each exactly once. The ack and its
// follow-ups happen together or not at all: an ack refused (409, 404, 413,
// 503, or 400 for a bad follow-up) pushes none, and the job stays as it
// was.

// Done is a result that ends a job with follow-ups. A ResultHandler that
// returns one (or a *Done) has WorkResults ack its job with Result as the
// ack's result (nil: none) and Push as its follow-ups (AckJobPush); an
// ack that carries follow-ups pops the next job in a request of its own,
// since gmq takes no next pop with them. Follow-ups gmq refuses (400 or
// 413: a bad one, one with an ID or Unique, more than 100) fail the job
// with gmq's reason, so that it shows as the job's LastError and is tried
// again by its retry policy, or dies: acking it without them would lose
// what comes next.
type Done struct {
	Result any
	Push   []Job
}

// AckPush is AckResult with follow-ups: push, jobs as Push takes them but
// without ID or Unique (1 to 100; none is a plain AckResult), which gmq
// pushes once the ack succeeds, each exactly once. It returns the
// follow-ups' ids, in push's order (gmq numbers them).
//
// It returns no ids, and no error, when an earlier ack completed the job
// (gmq keeps it completed and answers "again": that ack's follow-ups
// stand, these were not pushed), and when a retry after a 503 finds the
// job gone (the first try acked it, with its follow-ups). A bad follow-up
// is an *Error with Status 400 (or 413, too big) naming it ("push: job
// N: ..."); a 503 (a broker or a store too old for follow-ups, Redis at
// maxmemory, a server status that refuses pushes) is retried as any, and
// the job stays reserved. A result encoding/json refuses is an error, and
// nothing is sent.
func (c *Client) AckPush(ctx context.Context, id string, attempt int, result any, push []Job) ([]string, error) {
	raw, err := encodeResult(result)
	if err != nil {
		return nil, err
	}
	return c.ack(ctx, delivery{id: id, attempt: attempt}, raw, push)
}

// AckJobPush is AckPush of a popped job, fenced by its Token (AckJob). The
// result and follow-ups given stand for j.Result and j.FollowUps.
func (c *Client) AckJobPush(ctx context.Context, j *Job, result any, push []Job) ([]string, error) {
	raw, err := encodeResult(result)
	if err != nil {
		return nil, err
	}
	return c.ack(ctx, deliveryOf(j), raw, push)
}

// ack acks d with result (nil: none) and follow-ups push (none: none), and
// returns the follow-ups' ids (none when an earlier ack pushed them: see
// AckPush).
func (c *Client) ack(ctx context.Context, d delivery, result json.RawMessage, push []Job) ([]string, error) {
	args := d.args()
	if result != nil {
		args["result"] = result
	}
	if len(push) > 0 {
		args["push"] = push
	}
	var out struct {
		Pushed []string `json:"pushed"`
	}
	err := c.call(ctx, http.MethodPost, jobPath(d.id, "ack"), args, 0, &out)
	if e := asError(err); e != nil && e.Retried && e.Status == http.StatusNotFound {
		return nil, nil // the earlier try acked it
	}
	return out.Pushed, err
}

// done is the handler's result read as a Done: itself, or a Done with
// result as its Result and no follow-ups.
func done(result any) Done {
	switch d := result.(type) {
	case Done:
		return d
	case *Done:
		if d == nil {
			return Done{}
		}
		return *d
	}
	return Done{Result: result}
}

// refusedFollowUps says whether err is gmq refusing an ack for its
// follow-ups (given some): a 400 (a bad one) or a 413 (too big), which no
// retry mends.
func refusedFollowUps(err error) bool {
	s := status(err)
	return s == http.StatusBadRequest || s == http.StatusRequestEntityTooLarge
}
