// Package client is a Go client for gmq's HTTP API: push (one job or a
// batch), pop with long polling (one job or a batch), ack (with a result,
// with follow-ups, with the next pop in the same request), fail, release,
// bury and touch, Work and WorkResults, a worker loop that runs a handler
// on each job popped and acks it (with the handler's result and
// follow-ups) and stops it when its job is cancelled, a job's progress
// (Progress), Cancel, WaitEnd and PushAndWait, a stream of the topics'
// events (Events), and cron schedules (SetSchedule, FireSchedule...).
//
// A Client holds no state beyond an http.Client and its options, and is safe
// for concurrent use. Every request carries the token when one is set, is
// bounded by the client's own timeout plus whatever wait it asks the broker
// for (a long poll is never cut by the client), and is retried when gmq
// answers 503 (Redis down or busy), after the Retry-After it sends.
//
// The module has no dependencies beyond the standard library.
package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Job is a job to push, or one popped. Its body is a string (Body), or a
// JSON object or array (JSON on push; on a popped job, Body with BodyJSON
// set): see MarshalJSON and UnmarshalJSON.
type Job struct {
	ID    string `json:"id,omitempty"` // optional on push: gmq numbers jobs without one
	Topic string `json:"topic"`
	// Body is the job's body as text: on push, sent as a string (unless
	// BodyJSON is set or JSON is given); on a popped job, the string pushed,
	// or the compact text of the JSON object or array pushed (BodyJSON set).
	Body string `json:"body"`
	// BodyJSON says Body is the text of a JSON object or array: set on a
	// popped job whose body was pushed as JSON, and on push, Body is then
	// sent as that JSON (so a popped job pushes again as it came).
	BodyJSON bool `json:"-"`
	// JSON, when not nil on push, is the body as a JSON value, sent as JSON
	// in place of Body: anything encoding/json makes an object or an array
	// of (a struct, a map, a slice, a json.RawMessage). gmq keeps its
	// compact text and gives it back as JSON: a popped job has it in Body,
	// with BodyJSON set (JSON stays nil). A value that encodes as a string
	// is a string body; a number, a boolean or null is refused (400).
	JSON     any     `json:"-"`
	Delay    float64 `json:"delay,omitempty"` // seconds
	TTR      float64 `json:"TTR,omitempty"`   // seconds; the server's default when 0 on push
	Priority *uint32 `json:"priority,omitempty"`
	Retry    *Retry  `json:"retry,omitempty"`  // the job's own retry policy; nil: its topic's
	Unique   *Unique `json:"unique,omitempty"` // on push: one job per key while the key is held (see Push)
	// Group is the job's fair group ("" for none, and not sent): 1 to 200
	// bytes of UTF-8 without control characters, else the push is a 400
	// (encoding/json sends invalid UTF-8 as U+FFFD). A topic that has
	// grouped jobs pops its groups in turn, priority ordering the jobs
	// within a group; popped and looked-at jobs carry it.
	Group string `json:"group,omitempty"`
	// KeepCompleted, on push, is how long (seconds) the job is kept after
	// its ack, completed, with the ack's result, over its topic's
	// keep_completed: new(600.0) keeps it ten minutes, new(0.0) deletes it
	// at its ack; nil leaves it to the topic. A job read back has its own,
	// when it was pushed with one.
	KeepCompleted *float64 `json:"keep_completed,omitempty"`
	// Timeout, on push, is how long (seconds) a worker's handler may run on
	// the job (0: no limit of its own): Work stops a handler past it, or
	// past its WorkOptions.Timeout, whichever is shorter, and fails the job
	// (ErrHandlerTimeout). A popped job has it.
	Timeout float64 `json:"timeout,omitempty"`
	// After, on push, are the jobs (their ids) this one waits for: gmq
	// keeps it in state "waiting" until each has completed (gmq's
	// docs/workflows.md, Dependencies); a job read back has them too.
	// OnDependencyFailure is "cancel" (the default, "") or "run": what a
	// dependency that dies or is cancelled does to it. WithResults keeps
	// their results with it, read back with Get.
	After               []string `json:"after,omitempty"`
	OnDependencyFailure string   `json:"on_dependency_failure,omitempty"`
	WithResults         bool     `json:"with_results,omitempty"`
	// WithResult, on a follow-up (AckPush) or a batch's callback
	// (NewBatch), makes its body {"body": its body, "result": the finished
	// job's result, or the batch's summary}.
	WithResult bool `json:"with_result,omitempty"`
	// Batch, on a job read back, is the batch it belongs to (CreateBatch).
	Batch string `json:"batch,omitempty"`
	// Then and OnDead, on push, are the jobs gmq pushes once when this one
	// completes, and when it dies (gmq's docs/workflows.md, "A job's own
	// follow-ups"): as Push takes them, without ID or Unique; a Then may
	// have WithResult. A job read back has their ids instead, ThenIDs and
	// OnDeadIDs, until they are pushed. Never read from gmq.
	Then   []Job `json:"-"`
	OnDead []Job `json:"-"`
	// Read back (Get): the follow-ups' ids; the jobs of After not yet
	// completed; and, with WithResults, their results by id (JSON text,
	// "null" for none).
	ThenIDs           []string                   `json:"-"`
	OnDeadIDs         []string                   `json:"-"`
	WaitingFor        []string                   `json:"-"`
	DependencyResults map[string]json.RawMessage `json:"-"`

	// Set on popped jobs.
	State   string     `json:"state,omitempty"`
	Created time.Time  `json:"created,omitzero"`
	Due     *time.Time `json:"due,omitempty"`     // when a reservation's TTR runs out (Redis's clock)
	Attempt int        `json:"attempt,omitempty"` // pass it back to Ack, Release, Bury, Touch
	// Token names the delivery the pop made (opaque: send it back as it
	// came). The calls given the popped Job (AckJob, TouchJob, ReleaseJob,
	// BuryJob, FailJob, AckJobAndPop, AckMany, FailMany, and Work) send it,
	// so that they reach this delivery of this job and no other: a job
	// pushed again with the same ID (after Redis lost its data) is another
	// job, which a late ack given only the ID and Attempt would reach.
	// Empty from a broker too old to hand one out: then none is sent.
	Token    string `json:"token,omitempty"`
	Reserves int    `json:"reserves,omitempty"`
	Timeouts int    `json:"timeouts,omitempty"`
	// Failures is how many times consumers failed it; LastError the last reason.
	Failures  int    `json:"failures,omitempty"`
	LastError string `json:"last_error,omitempty"`
	// Read back (Get): MaxAttempts is how many failures it may have before
	// it is dead (0: for ever; its own retry policy's, its topic's or gmq's
	// default; nil from a pop or a list, which show only a job's own);
	// NextAttemptAt, on a job waiting out its backoff after a failure, when
	// it is ready again; Errors its last failures' errors, oldest first
	// (gmq keeps 10). Never sent with a push.
	MaxAttempts   *int           `json:"-"`
	NextAttemptAt *time.Time     `json:"-"`
	Errors        []FailureError `json:"-"`

	// Set on a completed job (State "completed", read with Get): when its
	// ack completed it, and the result the ack gave as its JSON text (nil:
	// none), for json.Unmarshal. On a job given to AckJob, AckJobAndPop or
	// AckMany, Result is the result the ack gives (nil: none): see
	// AckJobResult.
	CompletedAt time.Time       `json:"completed_at,omitzero"`
	Result      json.RawMessage `json:"result,omitempty"`
	// FollowUps, on a job given to AckJob, AckJobAndPop or AckMany, are
	// the jobs its ack pushes once it succeeds, each exactly once (nil:
	// none; see AckPush). Never sent with a push, nor read from gmq.
	FollowUps []Job `json:"-"`

	// Set on a cancelled job (State "cancelled", read with Get, WaitEnd or
	// Cancel): when it ended so. Cancelling is set on a reserved job whose
	// cancel is asked: its consumer's next touch, Progress, ack, release,
	// bury or fail answers 410 (ErrCancelled), which ends it cancelled.
	CancelledAt time.Time `json:"cancelled_at,omitzero"`
	Cancelling  bool      `json:"cancelling,omitempty"`
	// Progress is the last progress its consumer reported (see Progress),
	// as its JSON text (nil: none); Log is the job's log, oldest first.
	Progress json.RawMessage `json:"progress,omitempty"`
	Log      []LogLine       `json:"log,omitempty"`
}

// LogLine is a line of a job's log (see Progress).
type LogLine struct {
	At   time.Time `json:"at"`
	Line string    `json:"line"`
}

// Retry is a job's own retry policy; what it leaves out (nil, "" or 0) is
// its topic's. Base and Max are seconds.
type Retry struct {
	MaxAttempts *int    `json:"max_attempts,omitempty"` // 0: for ever
	Backoff     string  `json:"backoff,omitempty"`      // "fixed", "linear" or "exponential"
	Base        float64 `json:"base,omitempty"`
	Max         float64 `json:"max,omitempty"`
	Jitter      *bool   `json:"jitter,omitempty"`
}

// Priority returns a pointer for Job.Priority.
func Priority(p uint32) *uint32 { return &p }

// Error is an answer from gmq that is not a success.
type Error struct {
	// Status is the HTTP status: 400 bad input, 401 no or wrong token,
	// 404 unknown, 409 conflict, 410 the job was cancelled (IsCancelled),
	// 413 too big, 429 too many waiting or too many wrong tokens, 503 Redis
	// down or busy.
	Status  int
	Message string // gmq's reason
	// HeldBy is, for a 409 to a unique push (mode reject), the id of the
	// job that holds its key (see HeldBy); "" otherwise.
	HeldBy string
	// Retried says the answer came to a retry: an earlier try answered 503,
	// which does not always mean it did nothing (a request timeout may fall
	// after the work). See Push and Ack for what the client makes of it.
	Retried bool

	retryAfter time.Duration // the answer's Retry-After, 0 without one
	body       []byte        // the whole answer, for what a batch call did before failing
}

func (e *Error) Error() string {
	if e.Retried {
		return fmt.Sprintf("gmq: %d: %s (on a retry)", e.Status, e.Message)
	}
	return fmt.Sprintf("gmq: %d: %s", e.Status, e.Message)
}

// IsNotFound reports whether err is gmq's 404.
func IsNotFound(err error) bool { return status(err) == http.StatusNotFound }

// IsConflict reports whether err is gmq's 409 (duplicate id, unique key
// held, stale delivery, wrong state, a schedule's overlap skip).
func IsConflict(err error) bool { return status(err) == http.StatusConflict }

// IsUnauthorized reports whether err is gmq's 401: the broker requires a
// token ([web] token) and the client sent none, or a wrong one.
func IsUnauthorized(err error) bool { return status(err) == http.StatusUnauthorized }

// IsCancelled reports whether err is gmq's 410: the job was cancelled
// while it was reserved, and this call ended it (see Cancel). errors.Is(err,
// ErrCancelled) says the same, and also holds for a Work handler's context
// cause.
func IsCancelled(err error) bool { return status(err) == http.StatusGone }

// Is makes an *Error of status 410 match ErrCancelled, for errors.Is.
func (e *Error) Is(target error) bool { return target == ErrCancelled && e.Status == http.StatusGone }

// IsUnavailable reports whether err is gmq's 503 (Redis down or busy), once
// the client's retries are spent.
func IsUnavailable(err error) bool { return status(err) == http.StatusServiceUnavailable }

func status(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// Options configure a Client. The zero value is a client without a token,
// with the defaults below.
type Options struct {
	// Token is the broker's [web] token, sent as "Authorization: Bearer
	// <token>" on every request; "" sends none.
	Token string
	// HTTPClient sends the requests (nil: a new http.Client). Its own Timeout
	// is not used as such, since it would cut long polls: a copy without it
	// is used, and it stands for Timeout when Timeout is 0.
	HTTPClient *http.Client
	// Timeout bounds each request on top of the wait it asks the broker for
	// (a pop's timeout, an ack's next pop): a pop of 30 s may take 30 s plus
	// Timeout. Default 10 s, twice the broker's default request_timeout, so
	// that the broker's own 503 comes first.
	Timeout time.Duration
	// Retries is how many times a request answered 503 is sent again
	// (default 3; negative: never). Each retry waits the answer's
	// Retry-After, or a backoff doubling from 100 ms, whichever is longer,
	// at most MaxBackoff (or Retry-After, when that is longer).
	Retries int
	// MaxBackoff caps the wait between retries (default 5 s).
	MaxBackoff time.Duration
}

// Defaults of Options.
const (
	DefaultTimeout    = 10 * time.Second
	DefaultRetries    = 3
	DefaultMaxBackoff = 5 * time.Second
	firstBackoff      = 100 * time.Millisecond
)

// withDefaults fills in what opts leaves out.
func (opts Options) withDefaults() Options {
	hc := http.Client{}
	if opts.HTTPClient != nil {
		hc = *opts.HTTPClient
	}
	if opts.Timeout <= 0 {
		opts.Timeout = hc.Timeout
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	hc.Timeout = 0 // each request has a deadline of its own (Client.call)
	opts.HTTPClient = &hc
	switch {
	case opts.Retries == 0:
		opts.Retries = DefaultRetries
	case opts.Retries < 0:
		opts.Retries = 0
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = DefaultMaxBackoff
	}
	return opts
}

// Client talks to one gmq.
type Client struct {
	base string
	opts Options
}

// New returns a client for the gmq at baseURL (e.g. "http://127.0.0.1:8000")
// with the default options and httpClient (nil: a new one); see Options for
// its Timeout. NewWithOptions sets a token and the rest.
func New(baseURL string, httpClient *http.Client) *Client {
	return NewWithOptions(baseURL, Options{HTTPClient: httpClient})
}

// NewWithOptions returns a client for the gmq at baseURL.
func NewWithOptions(baseURL string, opts Options) *Client {
	return &Client{base: strings.TrimRight(baseURL, "/"), opts: opts.withDefaults()}
}
