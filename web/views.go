package web

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gmq/gmq/job"
)

// jobView is a job as the API shows it. Durations are in seconds; "TTR" and
// "consumeNum" keep gmq's names. It is a struct, not a map: every pop renders
// one, and a map costs an allocation per field and a sort of its keys.
type jobView struct {
	ID         string  `json:"id"`
	InternalID uint64  `json:"internal_id"`
	Topic      string  `json:"topic"`
	Body       any     `json:"body"` // job.BodyValue
	State      string  `json:"state"`
	Priority   uint32  `json:"priority"`
	Delay      float64 `json:"delay"`
	TTR        float64 `json:"TTR"`
	Attempt    int     `json:"attempt"`
	Reserves   int     `json:"reserves"`
	ConsumeNum int     `json:"consumeNum"`
	Timeouts   int     `json:"timeouts"`
	Releases   int     `json:"releases"`
	Buries     int     `json:"buries"`
	Kicks      int     `json:"kicks"`
	Created    string  `json:"created"`
	Age        float64 `json:"age"`
	TimeLeft   float64 `json:"time_left"`
	Due        string  `json:"due,omitempty"`
	Expires    string  `json:"expires,omitempty"` // when it expires (RFC 3339); absent: never
	Failures   int     `json:"failures"`
	// MaxAttempts is how many failures it may have before it is dead (0:
	// for ever): its own retry policy's, its topic's or the default (a look
	// at one job; a pop's or a list's view shows only a job's own).
	MaxAttempts *int `json:"max_attempts,omitempty"`
	// NextAttemptAt is when a job waiting out its backoff after a failure
	// is ready again (RFC 3339): its due time, so named.
	NextAttemptAt string `json:"next_attempt_at,omitempty"`
	LastError     string `json:"last_error,omitempty"`
	// Errors are its last failures' errors, oldest first (job.ErrorsKept).
	Errors []errorView `json:"errors,omitempty"`
	DeadAt string      `json:"dead_at,omitempty"`
	// TraceParent is the producer's W3C trace context, for the consumer's span.
	TraceParent string `json:"traceparent,omitempty"`
	// Group is the job's fair group (docs/topics.md, Fair groups).
	Group string `json:"group,omitempty"`
	// CompletedAt is when its ack completed it (keep_completed), Result
	// what the ack gave (any JSON value), KeepCompleted its own
	// keep_completed in seconds, when it was pushed with one.
	CompletedAt   string          `json:"completed_at,omitempty"`
	CancelledAt   string          `json:"cancelled_at,omitempty"`
	Result        json.RawMessage `json:"result,omitempty"`
	KeepCompleted *float64        `json:"keep_completed,omitempty"`
	// Timeout is how long a worker's handler may run on it, seconds.
	Timeout float64 `json:"timeout,omitempty"`
	// Cancelling: a cancel was asked while it was reserved (its consumer
	// learns it at its next touch, progress or ack); Progress and Log are
	// what its consumer reported (POST .../progress).
	Cancelling bool            `json:"cancelling,omitempty"`
	Progress   json.RawMessage `json:"progress,omitempty"`
	Log        []logLineView   `json:"log,omitempty"`
	// History is its transitions, where its topic keeps them (job_history).
	History []historyView `json:"history,omitempty"`
	// Then and OnDead are the ids its follow-ups are pushed under when it
	// completes, when it dies (docs/workflows.md); gone once pushed.
	Then   []string `json:"then,omitempty"`
	OnDead []string `json:"on_dead,omitempty"`
	// After, pushed with after: the jobs it waits for, WaitingFor those not
	// yet completed, and their results (with_results) by id
	// (docs/workflows.md, Dependencies).
	After               []string                   `json:"after,omitempty"`
	WaitingFor          []string                   `json:"waiting_for,omitempty"`
	OnDependencyFailure string                     `json:"on_dependency_failure,omitempty"`
	DependencyResults   map[string]json.RawMessage `json:"dependency_results,omitempty"`
	// Batch is the batch it belongs to (docs/workflows.md, Batches).
	Batch string `json:"batch,omitempty"`
	// Token names the delivery a pop made (job.Delivery), for the consumer
	// to send back with its ack, touch, release, bury or fail; only pops
	// show it.
	Token string `json:"token,omitempty"`
}

// errorView is one failure of a job: the attempt that failed, when, and
// its error.
type errorView struct {
	Attempt int    `json:"attempt"`
	At      string `json:"at"`
	Error   string `json:"error"`
}

// viewErrors shows a job's failures' errors (nil: none).
func viewErrors(errs []job.FailureError) []errorView {
	if len(errs) == 0 {
		return nil
	}
	out := make([]errorView, len(errs))
	for i, e := range errs {
		out[i] = errorView{Attempt: e.Attempt, At: e.At.UTC().Format(time.RFC3339Nano), Error: e.Error}
	}
	return out
}

// historyView is one transition of a job.
type historyView struct {
	At      string `json:"at"`
	Event   string `json:"event"`
	Attempt int    `json:"attempt"`
	Detail  string `json:"detail,omitempty"`
}

// logLineView is a line of a job's log.
type logLineView struct {
	At   string `json:"at"`
	Line string `json:"line"`
}

func viewJob(j *job.Job) jobView {
	v := jobView{
		ID: j.PublicID(), InternalID: j.ID, Topic: j.Topic, Body: job.BodyValue(j.Body, j.BodyJSON),
		State: j.State.String(), Priority: j.Priority,
		Delay: seconds(j.Delay), TTR: seconds(j.TTR),
		Attempt: j.Attempt(), Reserves: j.Reserves, ConsumeNum: j.Reserves,
		Timeouts: j.Timeouts, Releases: j.Releases, Buries: j.Buries, Kicks: j.Kicks,
		Created: j.Created.UTC().Format(time.RFC3339Nano), Age: seconds(j.Age()),
		TimeLeft: seconds(j.TimeLeft()),
	}
	if !j.Due.IsZero() {
		v.Due = j.Due.UTC().Format(time.RFC3339Nano)
	}
	if !j.Expires.IsZero() {
		v.Expires = j.Expires.UTC().Format(time.RFC3339Nano)
	}
	v.Failures, v.LastError, v.TraceParent, v.Group = j.Failures, j.LastError, j.TraceParent, j.Group
	v.Errors = viewErrors(j.Errors)
	v.MaxAttempts = j.MaxAttempts
	if j.State == job.Delayed && j.Failures > 0 {
		v.NextAttemptAt = v.Due
	}
	if !j.DeadAt.IsZero() {
		v.DeadAt = j.DeadAt.UTC().Format(time.RFC3339Nano)
	}
	if at := j.EndedAt; !at.IsZero() && j.State == job.Cancelled {
		v.CancelledAt = at.UTC().Format(time.RFC3339Nano)
	} else if !at.IsZero() {
		v.CompletedAt = at.UTC().Format(time.RFC3339Nano)
	}
	if j.Result != "" {
		v.Result = json.RawMessage(j.Result)
	}
	v.Cancelling, v.Timeout = j.Cancelling, seconds(j.Timeout)
	if j.Progress != "" {
		v.Progress = json.RawMessage(j.Progress)
	}
	for _, l := range j.Log {
		v.Log = append(v.Log, logLineView{At: l.At.UTC().Format(time.RFC3339Nano), Line: l.Line})
	}
	v.Then, v.OnDead = ids(j.Then), ids(j.OnDead)
	if d := j.Dependencies; d != nil {
		v.After, v.WaitingFor, v.OnDependencyFailure = ids(d.After), ids(d.Pending), d.OnFailure
		for id, r := range d.Results {
			if v.DependencyResults == nil {
				v.DependencyResults = map[string]json.RawMessage{}
			}
			v.DependencyResults[strconv.FormatUint(id, 10)] = r
		}
	}
	if j.Batch != 0 {
		v.Batch = strconv.FormatUint(j.Batch, 10)
	}
	for _, e := range j.History {
		v.History = append(v.History, historyView{At: e.At.UTC().Format(time.RFC3339Nano), Event: e.Event, Attempt: e.Attempt, Detail: e.Detail})
	}
	if j.KeepCompleted >= 0 {
		keep := seconds(j.KeepCompleted)
		v.KeepCompleted = &keep
	}
	return v
}

// viewPopped is a job as a pop hands it out: with its delivery's token.
func viewPopped(j *job.Job) jobView {
	v := viewJob(j)
	v.Token = j.Delivery().Token()
	return v
}

func topicView(t job.TopicStats) gin.H {
	v := gin.H{
		"name": t.Name, "ready": t.Ready, "urgent": t.Urgent, "delayed": t.Delayed, "reserved": t.Reserved,
		"buried": t.Buried, "paused": t.Paused(), "pause": seconds(t.Pause), "pause_time_left": seconds(t.PauseLeft()),
		"total_jobs": t.Jobs, "total_reserves": t.Reserves, "total_deletes": t.Deletes, "total_pauses": t.Pauses,
		"bytes": t.Bytes, "total_discarded": t.Discarded, "total_expired": t.Expired, "children": nonNil(t.Children),
		"dead": t.Dead, "total_failures": t.Failures, "total_dead": t.DeadTotal, "dead_retried": t.DeadRetried, "dead_dropped": t.DeadDropped, "ready_age": seconds(t.ReadyAge()),
		"completed": t.Completed, "total_completed": t.CompletedTotal, "cancelled": t.Cancelled, "total_cancelled": t.CancelledTotal,
		"settings": settingsView(t.Settings), "total_limited": t.Limited, "limited_seconds": seconds(t.LimitedTime),
	}
	if tokens, ok := t.RateTokens(); ok {
		v["tokens"] = tokens // only with a rate
	}
	if t.Groups > 0 { // a grouped topic with ready jobs: its busiest groups
		busiest := make([]gin.H, len(t.BusiestGroups))
		for i, g := range t.BusiestGroups {
			busiest[i] = gin.H{"group": g.Name, "ready": g.Ready, "reserved": g.Reserved}
		}
		v["groups"], v["busiest_groups"] = t.Groups, busiest
	}
	if t.GroupsForgotten > 0 { // group_max_parked was reached
		v["groups_forgotten"] = t.GroupsForgotten
	}
	if !t.Created.IsZero() {
		v["created"] = t.Created.UTC().Format(time.RFC3339Nano)
	}
	return v
}

// deliveryView is this broker's HTTP deliveries of a topic.
func webhookView(st job.WebhookStats) gin.H {
	v := gin.H{"sent": st.Sent, "acked": st.Acked, "released": st.Released, "failed": st.Failed,
		"in_flight": st.InFlight, "mean_latency": 0.0}
	if st.Sent > 0 {
		v["mean_latency"] = seconds(st.Time / time.Duration(st.Sent))
	}
	if st.LastError != "" {
		v["last_error"], v["last_error_at"] = st.LastError, st.LastErrorAt.UTC().Format(time.RFC3339Nano)
	}
	return v
}

// seconds renders a duration as seconds with millisecond precision.
func seconds(d time.Duration) float64 { return float64(d.Milliseconds()) / 1000 }

// settingsView shows a topic's settings, numbers as numbers and flags as
// booleans ({} when none is set).
func settingsView(c job.TopicConfig) gin.H {
	out := gin.H{}
	for k, v := range c {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			out[k] = n
		} else if f, err := strconv.ParseFloat(v, 64); err == nil && (k == "rate" || k == "group_rate") {
			out[k] = f
		} else if b, err := strconv.ParseBool(v); err == nil {
			out[k] = b
		} else {
			out[k] = v
		}
	}
	return out
}

// nonNil shows an empty list as [] rather than null.
func nonNil(list []string) []string {
	if list == nil {
		return []string{}
	}
	return list
}

// ids are job numbers as a view shows them.
func ids(ns []uint64) []string {
	var out []string
	for _, n := range ns {
		out = append(out, strconv.FormatUint(n, 10))
	}
	return out
}
