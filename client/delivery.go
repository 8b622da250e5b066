package client

import (
	"context"
	"time"
)

// delivery names a popped job's delivery for an ack, touch, release, bury
// or fail: its id and attempt, and its token when the call was given the
// popped Job (a call given only an id sends none).
type delivery struct {
	id      string
	attempt int
	token   string
}

// deliveryOf is the delivery a pop made of j.
func deliveryOf(j *Job) delivery { return delivery{id: j.ID, attempt: j.Attempt, token: j.Token} }

// args are the request's fields that name the delivery.
func (d delivery) args() map[string]any {
	args := map[string]any{"attempt": d.attempt}
	if d.token != "" {
		args["token"] = d.token
	}
	return args
}

// AckJob is Ack of a popped job, fenced by its Token (and Attempt): it
// acks that delivery of that job, and no other job its ID names now (a
// 404 when that job is gone, as Ack's). It gives j.Result as the ack's
// result, when set (AckJobResult), and j.FollowUps as its follow-ups,
// when set (AckJobPush, which returns their ids).
func (c *Client) AckJob(ctx context.Context, j *Job) error {
	_, err := c.ack(ctx, deliveryOf(j), j.Result, j.FollowUps)
	return err
}

// AckJobAndPop is AckAndPop of a popped job, fenced by its Token (AckJob),
// with j.Result as the ack's result, when set. A job with FollowUps is
// acked with them (AckJob) and the next popped in a second request, since
// gmq takes no next pop with follow-ups: if the ack fails, nothing is
// popped.
func (c *Client) AckJobAndPop(ctx context.Context, j *Job, topics []string, timeout time.Duration) (*Job, error) {
	if len(j.FollowUps) > 0 {
		if err := c.AckJob(ctx, j); err != nil {
			return nil, err
		}
		return c.Pop(ctx, topics, timeout)
	}
	return c.ackAndPop(ctx, deliveryOf(j), j.Result, topics, timeout)
}

// FailJob is Fail of a popped job, fenced by its Token (AckJob).
func (c *Client) FailJob(ctx context.Context, j *Job, reason string) (*Job, error) {
	return c.fail(ctx, deliveryOf(j), reason)
}

// ReleaseJob is Release of a popped job, fenced by its Token (AckJob).
func (c *Client) ReleaseJob(ctx context.Context, j *Job, priority *uint32, delay time.Duration) error {
	return c.release(ctx, deliveryOf(j), priority, delay)
}

// BuryJob is Bury of a popped job, fenced by its Token (AckJob).
func (c *Client) BuryJob(ctx context.Context, j *Job, priority *uint32) error {
	return c.bury(ctx, deliveryOf(j), priority)
}

// TouchJob is Touch of a popped job, fenced by its Token (AckJob).
func (c *Client) TouchJob(ctx context.Context, j *Job) error { return c.touch(ctx, deliveryOf(j)) }
