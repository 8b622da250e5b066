package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/gmq/gmq/dispatcher"
	"github.com/gmq/gmq/internal/jobjson"
	"github.com/gmq/gmq/job"
)

// The rules and errors of jobjson, as this package names them.
var errBadRequest = jobjson.ErrBadRequest

const maxSeconds = jobjson.MaxSeconds

type jobDefaults = jobjson.Defaults

// parsePush decodes the body of POST /api/v1/jobs.
func parsePush(data []byte, def jobDefaults) (job.Spec, error) {
	f, err := jobjson.Decode(data)
	if err != nil {
		return job.Spec{}, err
	}
	return jobjson.Job(f, def)
}

// parseBatch decodes the body of POST /api/v1/jobs/batch: {"jobs": [...]}.
func parseBatch(data []byte, def jobDefaults, limit int) ([]job.Spec, error) {
	_, items, err := jobsArray(data, limit, "a batch", "job objects", "jobs")
	if err != nil {
		return nil, err
	}
	jobs := make([]job.Spec, len(items))
	for i, item := range items {
		jf, err := jobjson.Decode(item)
		if err == nil {
			jobs[i], err = jobjson.Job(jf, def)
		}
		if err != nil {
			return nil, fmt.Errorf("job %d: %w", i, err)
		}
	}
	return jobs, nil
}

// popRequest is what a consumer asks for: with a Count, up to that many jobs,
// answered as {"jobs": [...]}; without, one job, answered as itself.
type popRequest = dispatcher.PopParams

// parsePop decodes the body of POST /api/v1/pop: {"topics": [...], "timeout": s,
// "count": n} ("topic": "name" is accepted for one topic).
func parsePop(data []byte) (popRequest, error) {
	var req popRequest
	f, err := jobjson.Decode(data)
	if err == nil {
		err = f.Only("a pop", "topics", "topic", "timeout", "count")
	}
	if err != nil {
		return req, err
	}
	if raw, ok := f["topics"]; ok {
		if err := json.Unmarshal(raw, &req.Topics); err != nil {
			return req, fmt.Errorf("%w: topics must be an array of strings, got %s", errBadRequest, jobjson.Clip(raw))
		}
	}
	if t, ok, err := f.Str("topic"); err != nil {
		return req, err
	} else if ok {
		req.Topics = append([]string{t}, req.Topics...)
	}
	if len(req.Topics) == 0 {
		return req, fmt.Errorf("%w: topics is missing", errBadRequest)
	}
	if req.Timeout, _, err = f.Seconds("timeout"); err != nil {
		return req, err
	}
	if n, _, err := f.Whole("count", 1, math.MaxInt32); err != nil {
		return req, err
	} else {
		req.Count = int(n)
	}
	return req, nil
}

// ackItem is one job of a batch ack.
type ackItem = dispatcher.Ack

// jobsArray decodes a request of many jobs, {"jobs": [...], ...}: the
// object and its 1 to limit items; kind ("a batch") and shape (what an item
// is) word the errors; fields are the object's names, "jobs" among them.
func jobsArray(data []byte, limit int, kind, shape string, fields ...string) (jobjson.Fields, []json.RawMessage, error) {
	f, err := jobjson.Decode(data)
	if err == nil {
		err = f.Only(kind, fields...)
	}
	if err != nil {
		return nil, nil, err
	}
	var items []json.RawMessage
	if raw, ok := f["jobs"]; !ok {
		return nil, nil, fmt.Errorf("%w: jobs is missing", errBadRequest)
	} else if err := json.Unmarshal(raw, &items); err != nil {
		return nil, nil, fmt.Errorf("%w: jobs must be an array of %s", errBadRequest, shape)
	}
	if len(items) == 0 || len(items) > limit {
		return nil, nil, fmt.Errorf("%w: %s holds 1 to %d jobs, got %d", errBadRequest, kind, limit, len(items))
	}
	return f, items, nil
}

// parseAcks decodes the body of POST /api/v1/ack: {"jobs": [{"id": ..,
// "attempt": n, "token": "...", "result": any}, ...], "next": {pop
// request}}; ids may be numbers.
func parseAcks(data []byte, limit int, def jobDefaults) ([]ackItem, [][]job.Spec, *popRequest, error) {
	f, items, err := jobsArray(data, limit, "an ack", `{"id": ..., "attempt": n, "token": "..."}`, "jobs", "next")
	if err != nil {
		return nil, nil, nil, err
	}
	acks := make([]ackItem, len(items))
	pushes := make([][]job.Spec, len(items)) // each ack's follow-ups (nil: none)
	for i, item := range items {
		jf, err := jobjson.Decode(item)
		if err == nil {
			err = jf.Only("an acked job", "id", "attempt", "token", "result", "push")
		}
		if err == nil {
			acks[i], err = parseAckItem(jf)
		}
		if err == nil {
			acks[i].Result, err = jf.Result()
		}
		if err == nil {
			pushes[i], err = jf.FollowUps("push", def)
		}
		if err != nil {
			return nil, nil, nil, fmt.Errorf("job %d: %w", i, err)
		}
	}
	var next *popRequest
	if raw, ok := f["next"]; ok && string(raw) != "null" {
		req, err := parsePop(raw)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("next: %w", err)
		}
		next = &req
	}
	return acks, pushes, next, nil
}

func parseAckItem(f jobjson.Fields) (ackItem, error) {
	var a ackItem
	if raw, ok := f["id"]; !ok || string(raw) == "null" {
		return a, fmt.Errorf("%w: id is missing", errBadRequest)
	}
	if id, _, err := f.Str("id"); err == nil {
		a.ID = id
	} else if n, _, err := f.Whole("id", 0, math.MaxInt64); err == nil {
		a.ID = strconv.FormatInt(n, 10)
	} else {
		return a, fmt.Errorf("%w: id must be a string or a number, got %s", errBadRequest, jobjson.Clip(f["id"]))
	}
	if a.ID == "" {
		return a, fmt.Errorf("%w: id is empty", errBadRequest)
	}
	attempt, _, err := f.Whole("attempt", 0, math.MaxInt32)
	if err != nil {
		return a, err
	}
	a.Attempt = int(attempt)
	a.Token, err = f.Token()
	return a, err
}

// jobCall holds the optional arguments of ack, release, bury, touch and fail.
type jobCall struct {
	Attempt  int
	Token    job.Delivery // the delivery's token (zero: none given)
	Priority int64        // job.KeepPriority when not given
	Delay    time.Duration
	Next     *popRequest // ack only: pop the next job in the same request
	Result   string      // ack only: the result kept with a completed job (jobjson Result)
	Progress string      // progress only: a JSON value's compact text
	Log      string      // progress only: a line of the job's log
	Error    string      // fail only: why
	Push     []job.Spec  // ack only: follow-ups, pushed once the ack succeeds (dispatcher.FollowUps)
}

// jobCallFields are the fields each job action's body may hold, so that a
// field another action takes ({"delay": 5} on an ack) is refused too, not
// ignored.
var jobCallFields = map[string][]string{
	"ack":      {"attempt", "token", "next", "result", "push"},
	"release":  {"attempt", "token", "delay", "priority", "pri"},
	"bury":     {"attempt", "token", "priority", "pri"},
	"touch":    {"attempt", "token"},
	"fail":     {"attempt", "token", "error"},
	"progress": {"attempt", "token", "progress", "log"},
}

// parseJobCall decodes the optional body of a job action (a key of
// jobCallFields); an empty body is no arguments. def are the defaults of
// an ack's follow-ups, as of a push.
func parseJobCall(data []byte, action string, def jobDefaults) (jobCall, error) {
	call := jobCall{Priority: job.KeepPriority}
	if len(bytes.TrimSpace(data)) == 0 {
		return call, nil
	}
	f, err := jobjson.Decode(data)
	if err == nil {
		err = f.Only("a job's "+action, jobCallFields[action]...)
	}
	if err != nil {
		return call, err
	}
	if a, _, err := f.Whole("attempt", 0, math.MaxInt32); err != nil {
		return call, err
	} else {
		call.Attempt = int(a)
	}
	if call.Token, err = f.Token(); err != nil {
		return call, err
	}
	if pri, ok, err := f.Priority(); err != nil {
		return call, err
	} else if ok {
		call.Priority = pri
	}
	if call.Delay, _, err = f.Seconds("delay"); err != nil {
		return call, err
	}
	if call.Error, _, err = f.Str("error"); err != nil {
		return call, err
	}
	if call.Result, err = f.Result(); err != nil {
		return call, err
	}
	if call.Progress, err = f.JSONValue("progress"); err != nil {
		return call, err
	}
	if call.Log, _, err = f.Str("log"); err != nil {
		return call, err
	}
	if raw, ok := f["next"]; ok && string(raw) != "null" {
		next, err := parsePop(raw)
		if err != nil {
			return call, fmt.Errorf("next: %w", err)
		}
		call.Next = &next
	}
	if call.Push, err = f.FollowUps("push", def); err != nil {
		return call, err
	}
	if call.Push != nil && call.Next != nil {
		return call, fmt.Errorf("%w: an ack with follow-ups (push) cannot pop the next job (next) in the same request: ack, then pop", errBadRequest)
	}
	return call, nil
}

// page is the window of a list a request asks for: ?offset= skips that many
// items (past the end: an empty page, with the total), ?limit= takes at most
// that many, cut to the list's own cap.
type page struct{ offset, limit int }

// parsePage reads ?offset= and ?limit= (empty: 0 and def): whole numbers,
// offset 0 or more (any int64), limit at least 1 and cut to most.
func parsePage(offset, limit string, def, most int) (page, error) {
	p := page{limit: def}
	if offset != "" {
		n, err := strconv.ParseInt(offset, 10, strconv.IntSize)
		if err != nil || n < 0 {
			return p, fmt.Errorf("%w: offset must be a whole number, 0 or more, got %q", errBadRequest, clipText(offset))
		}
		p.offset = int(n)
	}
	if limit != "" {
		n, err := strconv.ParseInt(limit, 10, 64)
		if err != nil || n < 1 {
			return p, fmt.Errorf("%w: limit must be a whole number, 1 or more (at most %d are answered), got %q", errBadRequest, most, clipText(limit))
		}
		p.limit = int(min(n, int64(most)))
	}
	p.limit = min(p.limit, most)
	return p, nil
}

// clipText shortens a query value for an error message.
func clipText(s string) string {
	const n = 40
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
