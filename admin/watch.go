package admin

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// watchIdle is how long a stream may send nothing before watch takes its
// connection for dead: the broker sends a comment every 15 s.
const watchIdle = 45 * time.Second

// watchBackoff bounds the wait between reconnections.
var watchBackoff = [2]time.Duration{time.Second, 15 * time.Second}

func watchFlags(f *flag.FlagSet, c *call) {
	f.StringVar(&c.types, "types", "", "only these event types, comma-separated: pushed, reserved, progress, stalled, completed, failed, dead, "+
		"cancelled, expired (default: every type)")
}

// watch prints the events of its topics (docs/outcomes.md, "Events") as
// they happen, a line each (the event's JSON with --json), until SIGINT or
// SIGTERM (exit 0). It says on stderr when the stream is in place, which
// of the topics has events off (they stream nothing), and what the broker
// said was missed (lost). A stream that drops, or that the broker ends
// because watch fell behind (lagging), is opened again from the last event
// seen (Last-Event-ID), so that nothing in between is missed; a broker that
// refuses the first stream, or refuses one with a 4xx, ends the command
// (exit 1).
func watch(c *call) error {
	ctx, stop := signal.NotifyContext(c.ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	for i, topic := range c.args {
		answer, err := c.do("GET", "/topics/"+c.path(i)+"/config", nil)
		if err != nil {
			return err
		}
		m, _ := answer.(map[string]any)
		if settings, _ := m["settings"].(map[string]any); settings["events"] != true {
			fmt.Fprintf(c.errOut, "gmq watch: %s streams nothing: its setting events is off (set events = true: "+
				"PUT /api/v1/topics/%s/config {\"events\": true}, or conf.ini's [topic.%s])\n", escapeControls(topic), c.path(i), escapeControls(topic))
		}
	}
	w := &watcher{c: c}
	return w.run(ctx)
}

// watcher is one gmq watch: its stream, reopened from last as it drops.
type watcher struct {
	c      *call
	last   string // the last event's id: where a new stream resumes
	opened bool   // a stream was in place once ("ready")
	ready  bool   // the current stream is in place
}

// errLagging is a stream the broker ended because watch fell behind.
var errLagging = errors.New("the broker ended the stream: this watch fell behind")

// refusedError is a stream the broker refused, with its status and reason.
type refusedError struct {
	status int
	msg    string
}

func (e *refusedError) Error() string { return fmt.Sprintf("%d: %s", e.status, e.msg) }

// run opens streams until ctx ends.
func (w *watcher) run(ctx context.Context) error {
	wait := watchBackoff[0]
	for {
		w.ready = false
		err := w.stream(ctx)
		if ctx.Err() != nil {
			return nil // interrupted: done
		}
		var refused *refusedError
		switch {
		case !w.opened:
			return err
		case errors.As(err, &refused) && refused.status < 500 && refused.status != http.StatusTooManyRequests:
			return err
		case w.ready:
			wait = watchBackoff[0] // it was in place: try again soon
		}
		if errors.Is(err, errLagging) {
			fmt.Fprintf(w.c.errOut, "gmq watch: %v: opening it again from the last event\n", err)
			continue
		}
		fmt.Fprintf(w.c.errOut, "gmq watch: %v: opening the stream again in %s, from the last event\n", err, wait)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		wait = min(2*wait, watchBackoff[1])
	}
}

// stream reads one stream of events, from w.last, until it ends: it
// returns why (ctx's end among others).
func (w *watcher) stream(parent context.Context) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	idle := time.AfterFunc(watchIdle, cancel) // a connection that went silent
	defer idle.Stop()
	q := url.Values{"topics": {strings.Join(w.c.args, ",")}}
	if w.c.types != "" {
		q.Set("types", w.c.types)
	}
	req, err := http.NewRequestWithContext(ctx, "GET", w.c.base+"/api/v1/events?"+q.Encode(), nil)
	if err != nil {
		return fmt.Errorf("the broker at %s: %w", w.c.base, err)
	}
	req.Header.Set("Accept", "text/event-stream")
	if w.last != "" {
		req.Header.Set("Last-Event-ID", w.last)
	}
	if w.c.token != "" {
		req.Header.Set("Authorization", "Bearer "+w.c.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("the broker at %s: %w", w.c.base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return refused(resp)
	}
	err = w.read(resp.Body, func() { idle.Reset(watchIdle) })
	if parent.Err() == nil && ctx.Err() != nil {
		return fmt.Errorf("the stream sent nothing for %s", watchIdle)
	}
	return err
}

// refused reads the broker's reason for refusing a stream.
func refused(resp *http.Response) error {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10)) // the reason is a nicety: the status says enough
	var answer struct {
		Error string `json:"error"`
	}
	msg := resp.Status
	if json.Unmarshal(data, &answer) == nil && answer.Error != "" {
		msg = answer.Error
	}
	return &refusedError{status: resp.StatusCode, msg: msg}
}

// read reads Server-Sent Events from r, each line told to alive, until the
// stream ends, an event cannot be shown, or the broker says watch lags.
func (w *watcher) read(r io.Reader, alive func()) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	var id, name string
	var data []byte
	for sc.Scan() {
		alive()
		line := sc.Text()
		if line == "" { // a blank line ends an event
			if data != nil {
				if err := w.dispatch(id, name, data); err != nil {
					return err
				}
			}
			id, name, data = "", "", nil
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field { // a comment (": keep-alive") has no field
		case "id":
			id = value
		case "event":
			name = value
		case "data":
			if data != nil {
				data = append(data, '\n')
			}
			data = append(data, value...)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading the stream: %w", err)
	}
	return errors.New("the stream ended")
}

// dispatch acts on one event: prints it, or says what a notice says.
func (w *watcher) dispatch(id, name string, data []byte) error {
	if id != "" {
		w.last = id
	}
	out, errOut := w.c.out, w.c.errOut
	switch name {
	case "":
		if w.c.json {
			_, err := fmt.Fprintf(out, "%s\n", data)
			return err
		}
		line, err := eventLine(data)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(out, line)
		return err
	case "ready":
		w.ready = true
		if !w.opened {
			fmt.Fprintf(errOut, "gmq watch: watching %s (Ctrl-C ends it)\n", escapeControls(strings.Join(w.c.args, ", ")))
		} else {
			fmt.Fprintln(errOut, "gmq watch: watching again")
		}
		w.opened = true
	case "lost":
		var lost struct {
			Buckets []int  `json:"buckets"`
			Error   string `json:"error"`
		}
		_ = json.Unmarshal(data, &lost) // the notice is told whatever it holds
		fmt.Fprintf(errOut, "gmq watch: events were missed (buckets %v): %s\n", lost.Buckets, escapeControls(lost.Error))
	case "lagging":
		return errLagging
	}
	return nil
}

// watchedEvent is an event's JSON as watch shows it.
type watchedEvent struct {
	Type     string          `json:"type"`
	Topic    string          `json:"topic"`
	ID       string          `json:"id"`
	Attempt  int64           `json:"attempt"`
	At       string          `json:"at"`
	Result   json.RawMessage `json:"result"`
	Error    json.RawMessage `json:"error"`
	Progress json.RawMessage `json:"progress"`
	Detail   json.RawMessage `json:"detail"`
	Cut      bool            `json:"cut"`
}

// eventLine is an event as a line: its time (UTC, to the millisecond),
// type, topic, job id and attempt, then what it carries as name=JSON
// (result=, error=, progress=; a value cut at 1 KiB is a JSON string of
// its first KiB, "(cut)" after it). Control characters are escaped.
func eventLine(data []byte) (string, error) {
	var ev watchedEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return "", fmt.Errorf("an event that is not JSON: %w", err)
	}
	at := ev.At
	if t, err := time.Parse(time.RFC3339Nano, ev.At); err == nil {
		at = t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
	}
	line := fmt.Sprintf("%s %-9s %s %s attempt %d", at, ev.Type, ev.Topic, ev.ID, ev.Attempt)
	for _, v := range []struct {
		name string
		raw  json.RawMessage
	}{{"result", ev.Result}, {"error", ev.Error}, {"progress", ev.Progress}, {"detail", ev.Detail}} {
		if v.raw != nil {
			line += " " + v.name + "=" + plainJSON(v.raw)
		}
	}
	if ev.Cut {
		line += " (cut)"
	}
	return escapeControls(line), nil
}

// plainJSON is a JSON value compact, "<" and "&" as themselves rather than
// the \u003c the broker's encoder writes (object keys sorted).
func plainJSON(raw json.RawMessage) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return string(raw)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return string(raw)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
