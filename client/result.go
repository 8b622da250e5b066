package client

import (
	"context"
	"encoding/json"
	"fmt"
)

// AckResult is Ack with a result: any value encoding/json encodes (nil, or
// one that encodes as null, is none). gmq keeps the job, completed, with
// the result's JSON, for its topic's keep_results (an hour by default),
// or as long as its keep_completed (its topic's or its own KeepCompleted)
// says where one is set, and Get shows it as the job's Result; where
// neither keeps it (0), the result is dropped with the job. A value
// encoding/json refuses is an error, and nothing is sent. A result over
// the topic's max_result (16 KiB by default) is an *Error with Status 413,
// and the job stays reserved: ack it again without one, or fail it.
func (c *Client) AckResult(ctx context.Context, id string, attempt int, result any) error {
	raw, err := encodeResult(result)
	if err != nil {
		return err
	}
	_, err = c.ack(ctx, delivery{id: id, attempt: attempt}, raw, nil)
	return err
}

// AckJobResult is AckResult of a popped job, fenced by its Token (AckJob).
// The result given stands for j.Result; j.FollowUps are sent as AckJob
// sends them.
func (c *Client) AckJobResult(ctx context.Context, j *Job, result any) error {
	raw, err := encodeResult(result)
	if err != nil {
		return err
	}
	_, err = c.ack(ctx, deliveryOf(j), raw, j.FollowUps)
	return err
}

// encodeResult is an ack's result as JSON: nil for none (nil, or a value
// that encodes as null, which gmq reads as none).
func encodeResult(result any) (json.RawMessage, error) {
	if result == nil {
		return nil, nil
	}
	data, err := json.Marshal(result)
	if err != nil {
		return nil, fmt.Errorf("gmq: the ack's result: %w", err)
	}
	if string(data) == "null" {
		return nil, nil
	}
	return data, nil
}
