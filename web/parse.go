package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/gmq/gmq/pool"
)

// errBadRequest marks client mistakes in a request body (400).
var errBadRequest = errors.New("bad request")

// maxSeconds is beanstalkd's limit for delays and TTRs: an unsigned 32-bit count of seconds.
const maxSeconds = math.MaxUint32

// jobDefaults fill what a push leaves out.
type jobDefaults struct {
	TTR      time.Duration
	Priority uint32
}

// fields is a JSON object whose keys are matched without regard to case, so
// that gmq's "TTR" and the alias "ttr" are one field.
type fields map[string]json.RawMessage

func decodeObject(data []byte) (fields, error) {
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("%w: malformed JSON: %v", errBadRequest, err)
	}
	if raw == nil {
		return nil, fmt.Errorf("%w: want a JSON object", errBadRequest)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: trailing data after the JSON object", errBadRequest)
	}
	out := make(fields, len(raw))
	for k, v := range raw {
		out[strings.ToLower(k)] = v
	}
	return out, nil
}

func (f fields) has(name string) bool { _, ok := f[name]; return ok }

// str reads a string field; ok is false when it is absent.
func (f fields) str(name string) (s string, ok bool, err error) {
	raw, ok := f[name]
	if !ok || string(raw) == "null" {
		return "", false, nil
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false, fmt.Errorf("%w: %s must be a string, got %s", errBadRequest, name, clip(raw))
	}
	return s, true, nil
}

// number reads a numeric field given as a JSON number or as a string holding
// one, as gmq's producers send "delay": "1800".
func (f fields) number(name string) (v float64, ok bool, err error) {
	raw, ok := f[name]
	if !ok || string(raw) == "null" {
		return 0, false, nil
	}
	text := string(raw)
	var s string
	if json.Unmarshal(raw, &s) == nil {
		text = strings.TrimSpace(s)
	}
	v, perr := strconv.ParseFloat(text, 64)
	if perr != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false, fmt.Errorf("%w: %s must be a number (or a string holding one), got %s", errBadRequest, name, clip(raw))
	}
	return v, true, nil
}

// seconds reads a duration in seconds, 0..2^32-1, fractions allowed.
func (f fields) seconds(name string) (time.Duration, bool, error) {
	v, ok, err := f.number(name)
	if err != nil || !ok {
		return 0, ok, err
	}
	if v < 0 || v > maxSeconds {
		return 0, false, fmt.Errorf("%w: %s must be from 0 to %d seconds, got %v", errBadRequest, name, uint64(maxSeconds), v)
	}
	return time.Duration(math.Ceil(v * float64(time.Second))), true, nil
}

// whole reads a whole number in lo..hi.
func (f fields) whole(name string, lo, hi int64) (int64, bool, error) {
	v, ok, err := f.number(name)
	if err != nil || !ok {
		return 0, ok, err
	}
	if v != math.Trunc(v) || v < float64(lo) || v > float64(hi) {
		return 0, false, fmt.Errorf("%w: %s must be a whole number from %d to %d, got %v", errBadRequest, name, lo, hi, v)
	}
	return int64(v), true, nil
}

// priority reads "priority" (alias "pri"); ok is false when absent.
func (f fields) priority() (int64, bool, error) {
	name := "priority"
	if !f.has(name) {
		name = "pri"
	}
	return f.whole(name, 0, math.MaxUint32)
}

// parseJob turns one pushed JSON object into a job.
func parseJob(f fields, def jobDefaults) (pool.NewJob, error) {
	j := pool.NewJob{TTR: def.TTR, Priority: def.Priority}
	var err error
	var ok bool
	if j.ClientID, _, err = f.str("id"); err != nil {
		return j, err
	}
	if j.Topic, ok, err = f.str("topic"); err != nil {
		return j, err
	} else if !ok {
		return j, fmt.Errorf("%w: topic is missing", errBadRequest)
	}
	if j.Body, ok, err = f.str("body"); err != nil {
		return j, err
	} else if !ok {
		return j, fmt.Errorf("%w: body is missing", errBadRequest)
	}
	if j.Delay, _, err = f.seconds("delay"); err != nil {
		return j, err
	}
	if ttr, ok, err := f.seconds("ttr"); err != nil {
		return j, err
	} else if ok {
		j.TTR = ttr
	}
	if pri, ok, err := f.priority(); err != nil {
		return j, err
	} else if ok {
		j.Priority = uint32(pri)
	}
	return j, nil
}

// parsePush decodes the body of POST /api/v1/jobs.
func parsePush(data []byte, def jobDefaults) (pool.NewJob, error) {
	f, err := decodeObject(data)
	if err != nil {
		return pool.NewJob{}, err
	}
	return parseJob(f, def)
}

// parseBatch decodes the body of POST /api/v1/jobs/batch: {"jobs": [...]}.
func parseBatch(data []byte, def jobDefaults, limit int) ([]pool.NewJob, error) {
	f, err := decodeObject(data)
	if err != nil {
		return nil, err
	}
	var items []json.RawMessage
	if raw, ok := f["jobs"]; !ok {
		return nil, fmt.Errorf("%w: jobs is missing", errBadRequest)
	} else if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("%w: jobs must be an array of job objects", errBadRequest)
	}
	if len(items) == 0 || len(items) > limit {
		return nil, fmt.Errorf("%w: a batch holds 1 to %d jobs, got %d", errBadRequest, limit, len(items))
	}
	jobs := make([]pool.NewJob, len(items))
	for i, item := range items {
		jf, err := decodeObject(item)
		if err == nil {
			jobs[i], err = parseJob(jf, def)
		}
		if err != nil {
			return nil, fmt.Errorf("job %d: %w", i, err)
		}
	}
	return jobs, nil
}

// popRequest is what a consumer asks for.
type popRequest struct {
	Topics  []string
	Timeout time.Duration
}

// parsePop decodes the body of POST /api/v1/pop: {"topics": [...], "timeout": s}
// ("topic": "name" is accepted for one topic).
func parsePop(data []byte) (popRequest, error) {
	var req popRequest
	f, err := decodeObject(data)
	if err != nil {
		return req, err
	}
	if raw, ok := f["topics"]; ok {
		if err := json.Unmarshal(raw, &req.Topics); err != nil {
			return req, fmt.Errorf("%w: topics must be an array of strings, got %s", errBadRequest, clip(raw))
		}
	}
	if t, ok, err := f.str("topic"); err != nil {
		return req, err
	} else if ok {
		req.Topics = append([]string{t}, req.Topics...)
	}
	if len(req.Topics) == 0 {
		return req, fmt.Errorf("%w: topics is missing", errBadRequest)
	}
	if req.Timeout, _, err = f.seconds("timeout"); err != nil {
		return req, err
	}
	return req, nil
}

// jobCall holds the optional arguments of ack, release, bury and touch.
type jobCall struct {
	Attempt  int
	Priority int64 // pool.KeepPriority when not given
	Delay    time.Duration
	Next     *popRequest // ack only: pop the next job in the same request
}

// parseJobCall decodes the optional body of a job action; an empty body is no arguments.
func parseJobCall(data []byte) (jobCall, error) {
	call := jobCall{Priority: pool.KeepPriority}
	if len(bytes.TrimSpace(data)) == 0 {
		return call, nil
	}
	f, err := decodeObject(data)
	if err != nil {
		return call, err
	}
	if a, _, err := f.whole("attempt", 0, math.MaxInt32); err != nil {
		return call, err
	} else {
		call.Attempt = int(a)
	}
	if pri, ok, err := f.priority(); err != nil {
		return call, err
	} else if ok {
		call.Priority = pri
	}
	if call.Delay, _, err = f.seconds("delay"); err != nil {
		return call, err
	}
	if raw, ok := f["next"]; ok && string(raw) != "null" {
		next, err := parsePop(raw)
		if err != nil {
			return call, fmt.Errorf("next: %w", err)
		}
		call.Next = &next
	}
	return call, nil
}

// clip shortens a raw value for an error message.
func clip(raw json.RawMessage) string {
	const n = 40
	if len(raw) > n {
		return string(raw[:n]) + "..."
	}
	return string(raw)
}
