package jobjson

// A job and its parts read from its JSON fields: the job itself (Job),
// its unique key, retry policy, expiry, an update, a delivery token.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/gmq/gmq/job"
)

// JobFields are the fields of a pushed job: gmq's (id, topic, body, delay,
// TTR, as the original gmq's producers send them) and this broker's. They
// stand beside Job, which reads each: a field is added to both at once.
var JobFields = []string{"id", "topic", "body", "delay", "ttr", "priority", "pri",
	"expires_in", "expires_at", "retry", "traceparent", "unique", "group", "keep_completed", "timeout", "then", "on_dead", "with_result",
	"after", "on_dependency_failure", "with_results"}

// Job turns one pushed JSON object into a job.
func Job(f Fields, def Defaults) (job.Spec, error) {
	j := job.Spec{TTR: def.TTR, Priority: def.Priority}
	if err := f.Only("a job", JobFields...); err != nil {
		return j, err
	}
	var err error
	var ok bool
	if j.ClientID, _, err = f.Str("id"); err != nil {
		return j, err
	}
	if j.Topic, ok, err = f.Str("topic"); err != nil {
		return j, err
	} else if !ok {
		return j, fmt.Errorf("%w: topic is missing", ErrBadRequest)
	} else if j.Topic == "" {
		return j, fmt.Errorf("%w: topic name is empty", ErrBadRequest)
	}
	if j.Body, j.BodyJSON, ok, err = f.Body(); err != nil {
		return j, err
	} else if !ok {
		return j, fmt.Errorf("%w: body is missing", ErrBadRequest)
	}
	if j.Delay, _, err = f.Seconds("delay"); err != nil {
		return j, err
	}
	if ttr, ok, err := f.Seconds("ttr"); err != nil {
		return j, err
	} else if ok {
		j.TTR = ttr
	}
	if pri, ok, err := f.Priority(); err != nil {
		return j, err
	} else if ok {
		j.Priority = uint32(pri)
	}
	if j.Expires, err = f.Expiry(time.Now()); err != nil {
		return j, err
	}
	if j.Retry, err = f.Retry(); err != nil {
		return j, err
	}
	if j.TraceParent, _, err = f.Str("traceparent"); err != nil {
		return j, err
	}
	if j.Unique, err = f.Unique(); err != nil {
		return j, err
	}
	if j.Group, _, err = f.Str("group"); err != nil {
		return j, err
	}
	if keep, ok, err := f.Seconds("keep_completed"); err != nil {
		return j, err
	} else if ok {
		j.KeepCompleted = &keep
	}
	if j.Timeout, _, err = f.Seconds("timeout"); err != nil {
		return j, err
	}
	if j.WithResult, err = f.flag("with_result"); err != nil {
		return j, err
	}
	if j.After, err = f.After(); err != nil {
		return j, err
	}
	if j.OnDependencyFailure, _, err = f.Str("on_dependency_failure"); err != nil {
		return j, err
	}
	if j.WithResults, err = f.flag("with_results"); err != nil {
		return j, err
	}
	if j.Then, err = f.FollowUps("then", def); err != nil {
		return j, err
	}
	if j.OnDead, err = f.FollowUps("on_dead", def); err != nil {
		return j, err
	}
	return j, nil
}

// flag reads a field that is true or false (absent or null: false). It
// reads the bytes as they are: json.Unmarshal into a field of a job.Spec
// moved the whole Spec to the heap, on every push.
func (f Fields) flag(name string) (bool, error) {
	switch raw := f[name]; string(raw) {
	case "", "null", "false":
		return false, nil
	case "true":
		return true, nil
	}
	return false, fmt.Errorf("%w: %s must be true or false", ErrBadRequest, name)
}

// MaxFollowUps is the most follow-ups one list may hold (an ack's push, a
// job's then or on_dead): each is pushed with its job's one script call.
const MaxFollowUps = 100

// FollowUps reads a list of follow-up jobs (an ack's "push", a job's
// "then" or "on_dead"): 1 to MaxFollowUps jobs, each as Job reads one;
// nil when absent or null.
func (f Fields) FollowUps(name string, def Defaults) ([]job.Spec, error) {
	return f.jobList(name, def, 1, MaxFollowUps)
}

// jobList reads a list of jobs under name, least to most of them, each as
// Job reads one (nil when absent or null).
func (f Fields) jobList(name string, def Defaults, least, most int) ([]job.Spec, error) {
	raw, ok := f[name]
	if !ok || string(raw) == "null" {
		return nil, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil || len(items) < least || len(items) > most {
		return nil, fmt.Errorf("%w: %s: want an array of %d to %d jobs, each as a push takes it", ErrBadRequest, name, least, most)
	}
	out := make([]job.Spec, len(items))
	for i, item := range items {
		jf, err := Decode(item)
		if err == nil {
			out[i], err = Job(jf, def)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: job %d: %w", name, i, err)
		}
	}
	return out, nil
}

// After reads "after": the jobs a job waits for, 1 to job.MaxAfter, each
// a job's id (a JSON number or string) or a client id; nil when absent or
// null.
func (f Fields) After() ([]string, error) {
	raw, ok := f["after"]
	if !ok || string(raw) == "null" {
		return nil, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil || len(items) == 0 || len(items) > job.MaxAfter {
		return nil, fmt.Errorf("%w: after: want an array of 1 to %d job ids", ErrBadRequest, job.MaxAfter)
	}
	out := make([]string, len(items))
	for i, item := range items {
		var id string
		if err := json.Unmarshal(item, &id); err == nil && id != "" {
			out[i] = id
			continue
		}
		n, err := strconv.ParseUint(string(item), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: after: item %d is not a job's id (a whole number, or a string)", ErrBadRequest, i)
		}
		out[i] = strconv.FormatUint(n, 10)
	}
	return out, nil
}

// Result reads an ack's "result": any JSON value, as its compact text (""
// when absent or null: no result).
func (f Fields) Result() (string, error) { return f.JSONValue("result") }

// JSONValue reads field name as any JSON value, as its compact text (""
// when absent or null).
func (f Fields) JSONValue(name string) (string, error) {
	raw, ok := f[name]
	if !ok || string(raw) == "null" {
		return "", nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return "", fmt.Errorf("%w: %s must be a JSON value: %v", ErrBadRequest, name, err)
	}
	if d := depth(b.Bytes()); d > MaxBodyDepth { // every client reads it back, as a body
		return "", fmt.Errorf("%w: %s: objects and arrays nested %d deep, at most %d", ErrBadRequest, name, d, MaxBodyDepth)
	}
	return b.String(), nil
}

// Unique reads "unique": {"key": "user-42", "for": 600, "mode": "reject"}
// (for in seconds; mode reject when left out, or replace or debounce). nil
// when absent.
func (f Fields) Unique() (*job.Unique, error) {
	raw, ok := f["unique"]
	if !ok || string(raw) == "null" {
		return nil, nil
	}
	u, err := Decode(raw)
	if err != nil {
		return nil, fmt.Errorf("unique: %w", err)
	}
	if err := u.Only("unique", "key", "for", "mode"); err != nil {
		return nil, fmt.Errorf("unique: %w", err)
	}
	out := job.Unique{Mode: job.UniqueReject}
	if out.Key, ok, err = u.Str("key"); err != nil {
		return nil, fmt.Errorf("unique: %w", err)
	} else if !ok {
		return nil, fmt.Errorf("%w: unique: key is missing", ErrBadRequest)
	}
	if out.For, ok, err = u.Seconds("for"); err != nil {
		return nil, fmt.Errorf("unique: %w", err)
	} else if !ok {
		return nil, fmt.Errorf("%w: unique: for is missing (the seconds its key is held)", ErrBadRequest)
	}
	if mode, ok, err := u.Str("mode"); err != nil {
		return nil, fmt.Errorf("unique: %w", err)
	} else if ok {
		out.Mode = job.UniqueMode(mode)
	}
	if err := out.Check(); err != nil {
		return nil, err
	}
	return &out, nil
}

// Retry reads "retry", a job's own retry policy: {"max_attempts": 5,
// "backoff": "exponential", "base": 2, "max": 3600, "jitter": true}
// (seconds); what it leaves out is the topic's. nil when absent.
func (f Fields) Retry() (*job.RetryPolicy, error) {
	raw, ok := f["retry"]
	if !ok || string(raw) == "null" {
		return nil, nil
	}
	r, err := Decode(raw)
	if err != nil {
		return nil, fmt.Errorf("retry: %w", err)
	}
	if err := r.Only("a retry policy", "max_attempts", "backoff", "base", "max", "jitter"); err != nil {
		return nil, fmt.Errorf("retry: %w", err)
	}
	p := &job.RetryPolicy{}
	if n, ok, err := r.Whole("max_attempts", 0, math.MaxInt32); err != nil {
		return nil, fmt.Errorf("retry: %w", err)
	} else if ok {
		v := int(n)
		p.MaxAttempts = &v
	}
	if p.Backoff, _, err = r.Str("backoff"); err != nil {
		return nil, fmt.Errorf("retry: %w", err)
	}
	if p.Base, _, err = r.Seconds("base"); err != nil {
		return nil, fmt.Errorf("retry: %w", err)
	}
	if p.Max, _, err = r.Seconds("max"); err != nil {
		return nil, fmt.Errorf("retry: %w", err)
	}
	if raw, ok := r["jitter"]; ok {
		var b bool
		if err := json.Unmarshal(raw, &b); err != nil {
			return nil, fmt.Errorf("%w: retry: jitter must be true or false", ErrBadRequest)
		}
		p.Jitter = &b
	}
	if err := p.Check(); err != nil {
		return nil, err
	}
	return p, nil
}

// Expiry reads "expires_in" (seconds from now; 0: never, as memcache's 0) or
// "expires_at" (a Unix time in seconds, fractions allowed; one in the past
// expires the job at once), not both: the zero time when neither is given.
func (f Fields) Expiry(now time.Time) (time.Time, error) {
	if f.Has("expires_in") && f.Has("expires_at") {
		return time.Time{}, fmt.Errorf("%w: give expires_in or expires_at, not both", ErrBadRequest)
	}
	if f.Has("expires_in") {
		in, _, err := f.Seconds("expires_in")
		if err != nil || in == 0 {
			return time.Time{}, err
		}
		return now.Add(in), nil
	}
	at, ok, err := f.Number("expires_at")
	if err != nil || !ok {
		return time.Time{}, err
	}
	if at <= 0 || at > maxEpoch {
		return time.Time{}, fmt.Errorf("%w: expires_at must be a Unix time in seconds, from 1 to %d, got %v", ErrBadRequest, int64(maxEpoch), at)
	}
	return time.UnixMilli(int64(math.Ceil(at * 1000))), nil
}

// maxEpoch bounds expires_at (year 9999), so that milliseconds fit Lua's doubles exactly.
const maxEpoch = 253402300799

// Clip shortens a raw value for an error message.
func Clip(raw json.RawMessage) string {
	const n = 40
	if len(raw) > n {
		return string(raw[:n]) + "..."
	}
	return string(raw)
}

// UpdateFields are what a change of a waiting job may name.
var UpdateFields = []string{"delay", "priority", "pri", "body"}

// Update reads a change of a waiting job (HTTP's PATCH, JSON-RPC's
// Service.Update): the fields given change, the others stay. Fields other
// than UpdateFields (and extra, the caller's own) are refused.
func (f Fields) Update(what string, extra ...string) (job.Update, error) {
	var u job.Update
	if err := f.Only(what, append(UpdateFields, extra...)...); err != nil {
		return u, err
	}
	if d, ok, err := f.Seconds("delay"); err != nil {
		return u, err
	} else if ok {
		u.Delay = &d
	}
	if p, ok, err := f.Priority(); err != nil {
		return u, err
	} else if ok {
		pri := uint32(p)
		u.Priority = &pri
	}
	if b, asJSON, ok, err := f.Body(); err != nil {
		return u, err
	} else if ok {
		u.Body, u.BodyJSON = &b, asJSON
	}
	return u, nil
}

// ParseToken reads a delivery's token as a pop hands it out (job.Delivery's
// Token): two whole numbers joined by a dot, the job's number (1 or more,
// at most 2^64-1) and the attempt (1 to 2^31-1), digits only. Anything
// else is an ErrBadRequest naming the token.
func ParseToken(s string) (job.Delivery, error) {
	bad := func(why string) (job.Delivery, error) {
		return job.Delivery{}, fmt.Errorf("%w: token must be what a pop returned (%s), got %q", ErrBadRequest, why, Clip([]byte(s)))
	}
	num, att, ok := strings.Cut(s, ".")
	if !ok || !job.IsNumber(num) || !job.IsNumber(att) {
		return bad("two whole numbers joined by a dot")
	}
	id, err := strconv.ParseUint(num, 10, 64)
	if err != nil || id == 0 {
		return bad("a job number from 1 to 18446744073709551615")
	}
	attempt, err := strconv.ParseInt(att, 10, 32)
	if err != nil || attempt < 1 {
		return bad("an attempt from 1 to 2147483647")
	}
	return job.Delivery{ID: id, Attempt: int(attempt)}, nil
}

// Token reads the "token" field (ParseToken); the zero Delivery when absent
// or null.
func (f Fields) Token() (job.Delivery, error) {
	s, ok, err := f.Str("token")
	if err != nil || !ok {
		return job.Delivery{}, err
	}
	return ParseToken(s)
}
