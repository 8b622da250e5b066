package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gmq/gmq/dispatcher"
	"github.com/gmq/gmq/internal/jobjson"
	"github.com/gmq/gmq/job"
)

// delivered is a job as its request's body carries it: what a consumer
// needs to do the work, and its token, to report progress or touch it
// over the API while the request is open.
type delivered struct {
	ID          string `json:"id"`
	InternalID  uint64 `json:"internal_id"`
	Topic       string `json:"topic"`
	Body        any    `json:"body"`
	Attempt     int    `json:"attempt"`
	Failures    int    `json:"failures"`
	Priority    uint32 `json:"priority"`
	TTR         int64  `json:"ttr"`
	Created     string `json:"created"`
	Token       string `json:"token"`
	Group       string `json:"group,omitempty"`
	TraceParent string `json:"traceparent,omitempty"`
	// BodyEncoding is "base64" when Body is the base64 of bytes that are
	// not valid UTF-8.
	BodyEncoding string `json:"body_encoding,omitempty"`
}

// deliver makes one job's request and settles the job by its answer: a
// 2xx acks it (the answer's body, as much as MaxAnswer reads, its
// result), a 429 or 503 with Retry-After releases it for that long, and
// anything else fails it under its retry policy. The request is cut at
// deliver_timeout, or sooner when the job's TTR would run out first (its
// TTR must outlast the request, else it is delivered again while the
// first is open). hard ending (the shutdown grace is over) cuts it too,
// and the job is given back. An ack pops the topic's next job in the same
// script, while the loop runs (one script a job, not two); deliver returns
// it, for its caller to deliver in the same request slot (nil: none).
func (x *Deliverer) deliver(hard context.Context, l *topicLoop, j *job.Job, popped time.Time) (*job.Job, time.Time) {
	cfg := *l.settings.Load()
	limit, now := cfg.DeliveryTimeout(), time.Now()
	deadline := now.Add(limit)
	if j.TTR > 0 { // from the pop's answer: Redis began the TTR a round trip before (ttrMargin)
		if ttrEnd := popped.Add(j.TTR - ttrMargin(j.TTR)); ttrEnd.Before(deadline) {
			deadline, limit = ttrEnd, ttrEnd.Sub(now).Round(time.Millisecond)
		}
	}
	body := requestBody(j)
	ctx, cancel := context.WithDeadline(hard, deadline)
	defer cancel()
	x.open(l.topic, 1)
	start := time.Now()
	answer, err := x.post(ctx, cfg, j, body)
	took := time.Since(start)
	x.open(l.topic, -1)
	settle := dispatcher.SettleParams{Ack: dispatcher.Ack{ID: j.PublicID(), Token: j.Delivery()}}
	outcome, reason := Failed, ""
	switch {
	case hard.Err() != nil:
		settle.Action = dispatcher.ActionGiveBack
	case err != nil:
		settle.Action = dispatcher.ActionFail
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("no answer within %s (deliver_timeout, or the job's TTR)", limit)
		}
		reason = fmt.Sprintf("delivery to %s: %s", cfg[job.DeliverTo], cut(err.Error()))
	case answer.status >= 200 && answer.status < 300:
		outcome, settle.Action, settle.Result = Acked, dispatcher.ActionAck, answer.result()
	case (answer.status == http.StatusTooManyRequests || answer.status == http.StatusServiceUnavailable) && answer.retryAfter >= 0:
		outcome, settle.Action, settle.Delay, settle.Priority = Released, dispatcher.ActionRelease, min(max(answer.retryAfter, MinRetryAfter), MaxRetryAfter), job.KeepPriority
	default:
		settle.Action = dispatcher.ActionFail
		reason = fmt.Sprintf("delivery to %s: HTTP %d%s", cfg[job.DeliverTo], answer.status, answer.excerpt())
	}
	settle.Reason = reason
	var next *job.Job
	if settle.Action == dispatcher.ActionAck && l.ctx.Err() == nil {
		next = x.ackAndPop(l.topic, j, settle)
	} else {
		x.settle(l.topic, j, settle)
	}
	popped = time.Now()
	if settle.Action != dispatcher.ActionGiveBack { // a give-back is not an outcome of the endpoint's
		x.count(l.topic, outcome, took, reason)
	}
	return next, popped
}

// MinRetryAfter and MaxRetryAfter bound the release a Retry-After asks:
// 0, a past date or a negative number would have its job delivered again
// at once, over and over (a release is not a failure, so max_attempts never
// ends it), and an absurd one would park it for ever.
const (
	MinRetryAfter = time.Second
	MaxRetryAfter = time.Hour
)

// ttrMargin is how much sooner than its TTR a job's request is cut: a
// tenth of it, at least a second, at most half of it, so that the cut
// comes before Redis gives the job to another consumer even when the pop's
// answer took that long to come (the TTR began when Redis ran the pop).
func ttrMargin(ttr time.Duration) time.Duration {
	return min(ttr/2, max(time.Second, ttr/10))
}

// requestBody is a job as its request's body carries it. A body that is
// not valid UTF-8 (a beanstalkd or memcache put of bytes) cannot be a JSON
// string as it is: it goes as base64, with "body_encoding": "base64".
func requestBody(j *job.Job) []byte {
	d := delivered{ID: j.PublicID(), InternalID: j.ID, Topic: j.Topic, Body: job.BodyValue(j.Body, j.BodyJSON),
		Attempt: j.Attempt(), Failures: j.Failures, Priority: j.Priority, TTR: int64(j.TTR / time.Second),
		Created: j.Created.UTC().Format(time.RFC3339Nano), Token: j.Delivery().Token(), Group: j.Group, TraceParent: j.TraceParent}
	if s, ok := d.Body.(string); ok && !utf8.ValidString(s) {
		d.Body, d.BodyEncoding = base64.StdEncoding.EncodeToString([]byte(s)), "base64"
	}
	body, err := json.Marshal(d)
	if err != nil { // cannot happen: every field is JSON's
		body, _ = json.Marshal(delivered{ID: d.ID, InternalID: d.InternalID, Topic: d.Topic})
	}
	return body
}

// cut bounds a failure's reason: a transport's error may quote what the
// endpoint sent (a status line of megabytes), which would be kept with the
// job, counted in the stats and shown.
func cut(reason string) string {
	const most = 300
	if len(reason) <= most {
		return reason
	}
	b := []byte(reason[:most])
	for len(b) > 0 && !utf8.Valid(b) {
		b = b[:len(b)-1]
	}
	return strings.ToValidUTF8(string(b), "?") + "…"
}

// ackAndPop acks a delivered job and pops the topic's next ready one in
// the same script, when there is one (no wait: the loop's pop waits). A
// job settled meanwhile (stale, gone) is left as it is; an ack refused for
// another reason (its result too big, Redis down) is made as settle does.
func (x *Deliverer) ackAndPop(topic string, j *job.Job, p dispatcher.SettleParams) *job.Job {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	after := p.Ack
	jobs, err := x.d.Pop(ctx, dispatcher.PopParams{Topics: []string{topic}, After: &after})
	switch {
	case err == nil && len(jobs) > 0:
		return jobs[0]
	case err == nil || job.Acked(err):
		return nil // acked; nothing popped
	case job.Superseded(err):
		return nil // its TTR ran out, or it was deleted: asking again would say the same
	}
	x.settle(topic, j, p)
	return nil
}

// settle settles the delivered job on a context of its own (the request's
// may be over). A result the topic's max_result refuses is dropped, and the
// job acked without it: the endpoint did the work. A job settled meanwhile
// (its TTR ran out, it was deleted) is left as it is.
func (x *Deliverer) settle(topic string, j *job.Job, p dispatcher.SettleParams) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := x.d.Settle(ctx, p)
	var tooBig *job.ResultTooBigError
	if errors.As(err, &tooBig) {
		x.log.Warn("an endpoint's answer is over its topic's max_result: the job is acked without it", "topic", topic, "job", j.PublicID(), "max_result", tooBig.Max)
		p.Result = ""
		_, err = x.d.Settle(ctx, p)
	}
	if err != nil && !job.Superseded(err) {
		x.log.Warn("settle a delivered job", "topic", topic, "job", j.PublicID(), "err", err)
	}
}

// answer is what an endpoint said: its status, the start of its body, and
// a Retry-After's delay (-1: none, or not one gmq reads).
type answer struct {
	status     int
	body       []byte
	whole      bool // body is all of it (within MaxAnswer)
	retryAfter time.Duration
}

// post makes the request and reads the answer within MaxAnswer.
func (x *Deliverer) post(ctx context.Context, cfg job.TopicConfig, j *job.Job, body []byte) (answer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg[job.DeliverTo], bytes.NewReader(body))
	if err != nil {
		return answer{}, err
	}
	id, at := strconv.FormatUint(j.ID, 10), x.opts.Now().Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "gmq/"+x.opts.Version)
	req.Header.Set("webhook-id", id)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(at, 10))
	req.Header.Set("gmq-job-id", j.PublicID())
	req.Header.Set("gmq-topic", j.Topic)
	req.Header.Set("gmq-attempt", strconv.Itoa(j.Attempt()))
	req.Header.Set("gmq-failures", strconv.Itoa(j.Failures))
	if secret := cfg[job.DeliverSecret]; secret != "" {
		sig, err := Sign(secret, id, at, body)
		if err != nil {
			return answer{}, err
		}
		req.Header.Set("webhook-signature", sig)
	}
	resp, err := x.client.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	read, err := io.ReadAll(io.LimitReader(resp.Body, int64(x.opts.MaxAnswer)+1))
	if err != nil && (resp.StatusCode < 200 || resp.StatusCode > 299) {
		return answer{}, fmt.Errorf("HTTP %d, its answer cut short: %w", resp.StatusCode, err)
	}
	// A 2xx whose body is cut short (closed, or slower than the deadline)
	// still says the work was done: acked, without a result.
	a := answer{status: resp.StatusCode, body: read, whole: err == nil && len(read) <= x.opts.MaxAnswer, retryAfter: -1}
	if len(read) > x.opts.MaxAnswer {
		a.body = read[:x.opts.MaxAnswer]
	}
	if d, ok := retryAfter(resp.Header.Get("Retry-After"), x.opts.Now()); ok {
		a.retryAfter = d
	}
	return a, nil
}

// result is a 2xx answer's body as the job's result: JSON as it is, other
// text as a JSON string, nothing when empty or longer than MaxAnswer. JSON
// that some client could not read back (jobjson.Check: a lone surrogate, a
// number past a double, objects and arrays nested past
// jobjson.MaxBodyDepth) is kept as its text too: a pushed result would be
// refused, but this work is done.
func (a answer) result() string {
	b := bytes.TrimSpace(a.body)
	if len(b) == 0 || !a.whole {
		return ""
	}
	if json.Valid(b) && jobjson.Check(b) == nil {
		// JSONValue compacts it and refuses it nested too deep, as an ack's
		// result; it reads null as no value, but the endpoint sent null.
		switch c, err := (jobjson.Fields{"answer": b}).JSONValue("answer"); {
		case err == nil && c == "":
			return "null"
		case err == nil:
			return c
		}
	}
	var text bytes.Buffer
	enc := json.NewEncoder(&text)
	enc.SetEscapeHTML(false) // kept as sent: escaped, "<" would take 6 bytes
	if enc.Encode(strings.ToValidUTF8(string(b), "\uFFFD")) != nil {
		return ""
	}
	return strings.TrimSuffix(text.String(), "\n")
}

// excerpt is the start of an answer's body for a failure's reason.
func (a answer) excerpt() string {
	b := bytes.TrimSpace(a.body)
	if len(b) == 0 {
		return ""
	}
	if len(b) > 200 {
		b = b[:200]
		for len(b) > 0 && !utf8.Valid(b) {
			b = b[:len(b)-1]
		}
	}
	return ": " + strings.ToValidUTF8(string(b), "?")
}

// retryAfter reads a Retry-After header: seconds, or an HTTP date; at most
// job.MaxSeconds away.
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return time.Duration(min(max(n, 0), job.MaxSeconds)) * time.Second, true
	}
	at, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return min(max(at.Sub(now), 0), job.MaxSeconds*time.Second).Round(time.Second), true
}

// Sign is a delivery's webhook-signature header (Standard Webhooks): for
// each of secret's keys (two while one replaces the other), "v1," and the
// base64 of HMAC-SHA256 over "<id>.<timestamp>.<body>", separated by
// spaces. The timestamp in what is signed is what stops a replay: a
// receiver refuses one too old.
func Sign(secret, id string, at int64, body []byte) (string, error) {
	var sigs []string
	for _, s := range strings.Fields(secret) {
		key, err := job.SigningKey(s)
		if err != nil {
			return "", err
		}
		mac := hmac.New(sha256.New, key)
		fmt.Fprintf(mac, "%s.%d.", id, at)
		mac.Write(body)
		sigs = append(sigs, "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	}
	return strings.Join(sigs, " "), nil
}
