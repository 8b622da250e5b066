package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// EventLost is the Type of the Event Events yields when the broker said
// events were missed: the position resumed from is older than what its
// buckets keep (about their last 10,000 events each). Buckets names them
// and Error says it; the stream goes on from the oldest event they keep.
const EventLost = "lost"

// Event is one event of an events stream (Events): a transition of a job
// of a topic with events = true (docs/outcomes.md, "Events"), or, with
// Type EventLost, the broker's word that events were missed.
type Event struct {
	// Type is the transition: "pushed", "reserved", "progress", "stalled"
	// (its TTR ran out), "completed", "failed", "dead", "cancelled",
	// "expired"; or EventLost.
	Type       string    `json:"type"`
	Topic      string    `json:"topic"`
	ID         string    `json:"id"` // the job's id
	InternalID uint64    `json:"internal_id"`
	Attempt    int       `json:"attempt"`
	At         time.Time `json:"at"` // when it happened, Redis's clock
	// Result is a completed job's result as its JSON text (nil: none);
	// Progress a progress event's; Error a failure's (failed, dead), or a
	// lost event's notice; Detail what other types carry (the broker that
	// reserved the job, where an expired job went). Cut says the result,
	// progress or error was cut at 1 KiB: it is then the first 1 KiB of its
	// text, as a JSON string, and the job itself has it whole.
	Result   json.RawMessage `json:"result,omitempty"`
	Progress json.RawMessage `json:"progress,omitempty"`
	Error    string          `json:"error,omitempty"`
	Detail   string          `json:"-"`
	Cut      bool            `json:"cut,omitempty"`
	// Buckets are, on a lost event, the buckets whose events were missed.
	Buckets []int `json:"buckets,omitempty"`
	// EventID is the stream's position after this event: give it as
	// EventsOptions.LastEventID to resume after it (Events does so itself
	// when it reconnects). Opaque.
	EventID string `json:"-"`
}

// UnmarshalJSON reads an event as the broker sends it; its detail is text,
// or JSON that is kept as its text.
func (e *Event) UnmarshalJSON(data []byte) error {
	type fields Event
	in := struct {
		*fields
		Detail json.RawMessage `json:"detail"`
	}{fields: (*fields)(e)}
	if err := json.Unmarshal(data, &in); err != nil {
		return err
	}
	if len(in.Detail) > 0 && json.Unmarshal(in.Detail, &e.Detail) != nil {
		e.Detail = string(in.Detail)
	}
	return nil
}

// EventsOptions configure Events.
type EventsOptions struct {
	// Topics are the topics whose events the stream carries (at least one);
	// a topic without events = true has none.
	Topics []string
	// Types are the types wanted (nil: all); an unknown one is refused
	// (an error, at once).
	Types []string
	// LastEventID resumes after the event that had it (an Event's EventID);
	// "": from now.
	LastEventID string
	// IdleTimeout is how long a connection may stay silent before Events
	// takes it for dead and connects again (default 45 s: the broker sends
	// a keep-alive every 15 s).
	IdleTimeout time.Duration
	// OnReady, when set, is called each time a connection is in place (the
	// broker's ready event), the first and each after a reconnect, from
	// the goroutine that ranges over the events: the events that happen
	// from then on come.
	OnReady func()
	// Log is told of each reconnect and why; nil: slog.Default().
	Log *slog.Logger
}

// DefaultIdleTimeout is EventsOptions.IdleTimeout's default.
const DefaultIdleTimeout = 45 * time.Second

// errLagging ends a connection whose consumer fell behind (the broker's
// lagging event): Events connects again at once, from the last event.
var errLagging = errors.New("gmq: the events stream ended: its consumer fell behind")

// errRequest is a request that cannot be made (a bad base URL): no retry
// mends it.
var errRequest = errors.New("gmq: GET /api/v1/events")

// errIdle ends a connection that was silent for IdleTimeout.
var errIdle = errors.New("gmq: the events stream was silent past its idle timeout")

// Events streams the events of opts.Topics (GET /api/v1/events), each
// yielded with a nil error, until ctx is done or the loop stops ranging.
//
// A connection that drops, goes silent for opts.IdleTimeout, ends because
// the consumer fell behind (the broker's lagging event), or fails for want
// of a broker (no answer, 5xx, 429: max_waiting reached) is made again by
// itself, with the last event's EventID as Last-Event-ID, so that no event
// is missed or repeated; after a backoff doubling from 100 ms up to the
// client's MaxBackoff (at once after a lagging end). Events the broker no
// longer keeps come as one Event of Type EventLost. A refusal that no retry
// mends (400: no topic, an unknown type, a bad LastEventID; 401 ...) is
// yielded as an error (an *Error), and the stream ends. A ctx done ends it
// with nothing more.
//
// Until the first event has an EventID, a reconnect starts from the
// broker's now: what happened in between is not seen.
func (c *Client) Events(ctx context.Context, opts EventsOptions) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		if len(opts.Topics) == 0 {
			yield(Event{}, errors.New("gmq: Events needs at least one topic"))
			return
		}
		s := &eventStream{c: c, opts: opts, last: opts.LastEventID, yield: yield}
		if s.opts.IdleTimeout <= 0 {
			s.opts.IdleTimeout = DefaultIdleTimeout
		}
		if s.opts.Log == nil {
			s.opts.Log = slog.Default()
		}
		s.run(ctx)
	}
}

// eventStream is one Events call: its connections, one after another.
type eventStream struct {
	c     *Client
	opts  EventsOptions
	last  string // the last event's id: where a reconnect resumes
	yield func(Event, error) bool
	done  bool // the consumer stopped ranging
}

// run connects, and connects again, until ctx is done, the consumer
// stops, or the broker refuses for good.
func (s *eventStream) run(ctx context.Context) {
	for failures := 0; ; {
		began, err := s.connect(ctx)
		if s.done || ctx.Err() != nil {
			return
		}
		var e *Error
		if errors.As(err, &e) && refused(err) || errors.Is(err, errRequest) {
			s.yield(Event{}, fmt.Errorf("gmq: Events: %w", err))
			return
		}
		if began {
			failures = 0
		}
		wait, level := s.c.backoff(failures, 0), slog.LevelWarn
		switch {
		case errors.Is(err, errLagging):
			wait, level = 0, slog.LevelInfo
		case e != nil:
			wait = s.c.backoff(failures, e.retryAfter)
		}
		failures++
		s.opts.Log.Log(ctx, level, "gmq: events stream: connecting again", "topics", s.opts.Topics, "after", wait, "err", err)
		if sleep(ctx, wait) != nil {
			return
		}
	}
}

// connect makes one connection and yields its events until it ends:
// whether it got going (its ready event came), and why it ended.
func (s *eventStream) connect(ctx context.Context) (began bool, err error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	idle := time.AfterFunc(s.opts.IdleTimeout, func() { cancel(errIdle) })
	defer idle.Stop()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url(), nil)
	if err != nil {
		return false, fmt.Errorf("%w: %w", errRequest, err)
	}
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set("Accept", "text/event-stream")
	if s.last != "" {
		req.Header.Set("Last-Event-ID", s.last)
	}
	if s.c.opts.Token != "" {
		req.Header.Set("Authorization", "Bearer "+s.c.opts.Token)
	}
	resp, err := s.c.opts.HTTPClient.Do(req)
	if err != nil {
		return false, orCause(ctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		if err != nil {
			return false, fmt.Errorf("gmq: GET /api/v1/events: %s, and its answer: %w", resp.Status, err)
		}
		return false, answerError(resp, data)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		return false, fmt.Errorf("gmq: GET /api/v1/events: the answer is %q, not text/event-stream", ct)
	}
	lines := bufio.NewScanner(resp.Body)
	lines.Buffer(make([]byte, 0, 4096), 1<<20)
	var ev sseEvent
	for {
		idle.Reset(s.opts.IdleTimeout)
		if !lines.Scan() {
			break
		}
		if !ev.line(lines.Text()) {
			continue
		}
		if ev.id != "" {
			s.last = ev.id
		}
		idle.Stop() // the consumer may take its time over an event
		got, err := s.dispatch(ev)
		began = began || got
		if err != nil || s.done {
			return began, err
		}
		ev = sseEvent{id: ev.id}
	}
	if err := lines.Err(); err != nil {
		return began, orCause(ctx, err)
	}
	return began, fmt.Errorf("gmq: the events stream ended")
}

// dispatch acts on one whole event: yields a job's event or a lost one,
// calls OnReady on the ready event (got: true), and ends the connection
// (errLagging) on the lagging one.
func (s *eventStream) dispatch(ev sseEvent) (got bool, err error) {
	var out Event
	switch ev.name {
	case "ready":
		if s.opts.OnReady != nil {
			s.opts.OnReady()
		}
		return true, nil
	case "lagging":
		return false, errLagging
	case "", "message", EventLost:
	default:
		return false, nil // one this client does not know
	}
	if err := json.Unmarshal([]byte(ev.data), &out); err != nil {
		return false, fmt.Errorf("gmq: an event that is not JSON: %w", err)
	}
	if ev.name == EventLost {
		out.Type = EventLost
	}
	out.EventID = ev.id
	s.done = !s.yield(out, nil)
	return false, nil
}

// url is the stream's URL, with its topics and types.
func (s *eventStream) url() string {
	q := url.Values{"topics": {strings.Join(s.opts.Topics, ",")}}
	if len(s.opts.Types) > 0 {
		q.Set("types", strings.Join(s.opts.Types, ","))
	}
	return s.c.base + "/api/v1/events?" + q.Encode()
}

// orCause is err, or the cause of ctx's end when ctx ended it (errIdle).
func orCause(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); errors.Is(cause, errIdle) {
		return cause
	}
	return fmt.Errorf("gmq: GET /api/v1/events: %w", err)
}

// sseEvent gathers the lines of one Server-Sent Event (the HTML
// standard's event stream format): its id (kept from the last event that
// had one, as the standard says), its name, and its data lines joined.
type sseEvent struct {
	id, name, data string
	hasData        bool
}

// line reads one line of the stream; it says true when the line ends an
// event that has data (a blank line).
func (e *sseEvent) line(line string) bool {
	if line == "" {
		if !e.hasData {
			e.name = "" // an event without data is not dispatched
		}
		return e.hasData
	}
	if strings.HasPrefix(line, ":") {
		return false // a comment: the keep-alive
	}
	field, value, _ := strings.Cut(line, ":")
	value = strings.TrimPrefix(value, " ")
	switch field {
	case "id":
		if !strings.ContainsRune(value, 0) {
			e.id = value
		}
	case "event":
		e.name = value
	case "data":
		if e.hasData {
			e.data += "\n"
		}
		e.data, e.hasData = e.data+value, true
	}
	return false
}
