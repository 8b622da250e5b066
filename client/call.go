package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// errNoContent is a 204: a pop that found no job within its wait.
var errNoContent = errors.New("no content")

// call sends in as JSON (nil: no body) to path and decodes the answer into
// out (nil: the answer is dropped). wait is how long the broker may hold the
// request for a job; each try's deadline is wait plus the client's Timeout. A 503 is
// tried again, up to Options.Retries times, unless its answer says part of
// the work was done (a batch push's "stored_ids", an ack's "acked"): only
// the caller knows what is left to send. A 204 is errNoContent.
func (c *Client) call(ctx context.Context, method, path string, in any, wait time.Duration, out any) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return fmt.Errorf("gmq: %s %s: encode request: %w", method, path, err)
		}
	}
	for try := 0; ; try++ {
		data, err := c.try(ctx, method, path, body, wait)
		var e *Error
		if !errors.As(err, &e) {
			if err == nil && out != nil {
				if err := json.Unmarshal(data, out); err != nil {
					return fmt.Errorf("gmq: %s %s: decode answer: %w", method, path, err)
				}
			}
			return err
		}
		e.Retried = try > 0
		if partlyDone(e) || !c.retry(ctx, try, e) {
			return e
		}
	}
}

// retry says whether to send a request again after a failed answer e to try
// number try (from 0), having waited the backoff: only a 503, Retries
// times, and not once ctx is done.
func (c *Client) retry(ctx context.Context, try int, e *Error) bool {
	if e.Status != http.StatusServiceUnavailable || try >= c.opts.Retries {
		return false
	}
	return sleep(ctx, c.backoff(try, e.retryAfter)) == nil
}

// try sends one request and returns the answer's body: an *Error for a
// status of 300 or more, errNoContent for a 204.
func (c *Client) try(ctx context.Context, method, path string, body []byte, wait time.Duration) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, wait+c.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("gmq: %w", err)
	}
	req.Header.Set("User-Agent", userAgent)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.opts.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.opts.Token)
	}
	resp, err := c.opts.HTTPClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("gmq: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("gmq: %s %s: read answer: %w", method, path, err)
	}
	switch {
	case resp.StatusCode == http.StatusNoContent:
		return nil, errNoContent
	case resp.StatusCode >= 300:
		return nil, answerError(resp, data)
	}
	return data, nil
}

// answerError is the *Error of a failed answer: gmq's {"error": ...}, or the
// body itself when it is not that (a proxy's page, say).
func answerError(resp *http.Response, data []byte) *Error {
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(data, &e) != nil || e.Error == "" {
		e.Error = strings.TrimSpace(string(data))
	}
	return &Error{Status: resp.StatusCode, Message: e.Error, body: data,
		retryAfter: retryAfter(resp.Header.Get("Retry-After"), time.Now())}
}

// retryAfter reads a Retry-After header: seconds (what gmq sends) or an
// HTTP date; 0 when absent or unreadable.
func retryAfter(h string, now time.Time) time.Duration {
	if h == "" {
		return 0
	}
	if secs, err := strconv.Atoi(strings.TrimSpace(h)); err == nil && secs > 0 {
		return time.Duration(secs) * time.Second
	}
	if at, err := http.ParseTime(h); err == nil && at.After(now) {
		return at.Sub(now)
	}
	return 0
}

// partlyDone says whether a failed answer reports work done before the
// failure: the jobs a batch push stored, the ack before a failed pop, the
// job a push that waits stored before its wait failed.
func partlyDone(e *Error) bool {
	var done struct {
		Stored   []string        `json:"stored_ids"`
		Acked    json.RawMessage `json:"acked"`
		Internal uint64          `json:"internal_id"`
	}
	if json.Unmarshal(e.body, &done) != nil {
		return false
	}
	var one string
	var many []string
	return len(done.Stored) > 0 || done.Internal > 0 ||
		json.Unmarshal(done.Acked, &one) == nil && one != "" ||
		json.Unmarshal(done.Acked, &many) == nil && len(many) > 0
}

// backoff is how long to wait before retry number try+1: a delay doubling
// from firstBackoff up to MaxBackoff, or the answer's Retry-After when that
// is longer (gmq's is the time it expects to need).
func (c *Client) backoff(try int, retryAfter time.Duration) time.Duration {
	d := c.opts.MaxBackoff
	if try < 30 {
		d = min(firstBackoff<<try, c.opts.MaxBackoff)
	}
	return max(d, retryAfter)
}

// sleep waits d, or until ctx is done (its error).
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
