package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gmq/gmq/dispatcher"
	"github.com/gmq/gmq/job"
)

// events answers GET /api/v1/events?topics=a,b&types=completed,dead with a
// stream of Server-Sent Events (docs/outcomes.md, "Events"): a "ready"
// event at once, then each event of the topics (those with events = true),
// each with an id that names every bucket's position, which a consumer
// sends back as Last-Event-ID (or ?last_event_id=) to resume; a comment
// line every 15 s. A consumer that fell behind its buffer gets a "lagging"
// event and the stream ends; one that asks for a position its buckets no
// longer hold gets a "lost" event first. Streams end as the broker stops.
func (s *Server) events(c *gin.Context) {
	topics := splitList(append(c.QueryArray("topic"), c.QueryArray("topics")...))
	types := splitList(c.QueryArray("types"))
	// The header wins: EventSource sends it as it reconnects, newer than a
	// ?last_event_id= its first request carried.
	last := c.Query("last_event_id")
	if h := c.GetHeader("Last-Event-ID"); h != "" {
		last = h
	}
	from, err := parsePositions(last)
	if err != nil {
		c.AbortWithStatusJSON(s.failure(c, err, gin.H{}))
		return
	}
	ctx, cancel := context.WithCancel(c.Request.Context())
	defer cancel()
	stop := context.AfterFunc(s.streams, cancel) // the broker is stopping: end at once, not after the grace
	defer stop()
	started := false
	w := c.Writer
	rc := http.NewResponseController(w)
	send := func(ev *job.Event, positions map[int]string, lost []int) error {
		// A consumer that stops reading holds a write at most this long:
		// then the stream ends, its goroutine and buffer freed.
		_ = rc.SetWriteDeadline(time.Now().Add(eventWriteTimeout))
		if !started {
			started = true
			h := w.Header()
			h.Set("Content-Type", "text/event-stream")
			h.Set("Cache-Control", "no-cache")
			h.Set("X-Accel-Buffering", "no") // a proxy in front must not hold events back
			w.WriteHeader(http.StatusOK)
			writeEvent(w, encodePositions(positions), "ready", gin.H{"topics": topics}) // a consumer dropped before any event resumes from here
		}
		switch {
		case len(lost) > 0:
			writeEvent(w, encodePositions(positions), "lost", gin.H{"buckets": lost,
				"error": "these buckets' streams no longer hold the position asked for: events were missed; the stream goes on from the oldest held"})
		case ev != nil:
			writeEvent(w, encodePositions(positions), "", eventView(ev))
		default: // a heartbeat: the positions, which EventSource keeps without an event (no data)
			_, _ = fmt.Fprintf(w, ": keep-alive\nid: %s\n\n", encodePositions(positions))
		}
		if err := rc.Flush(); err != nil {
			return err
		}
		return ctx.Err()
	}
	err = s.d.Events(ctx, dispatcher.EventsParams{Topics: topics, Types: types, From: from, Send: send, Heartbeat: s.opts.EventsHeartbeat})
	switch {
	case !started && err != nil && !errors.Is(err, context.Canceled):
		c.AbortWithStatusJSON(s.failure(c, err, gin.H{}))
	case errors.Is(err, dispatcher.ErrEventsLagging):
		writeEvent(w, "", "lagging", gin.H{"error": err.Error()})
		w.Flush()
	}
}

// eventWriteTimeout bounds one write of an events stream.
const eventWriteTimeout = 10 * time.Second

// writeEvent writes one Server-Sent Event: its id (none when ""), its
// name (none: a message, "type" in its data), and its data as JSON.
func writeEvent(w http.ResponseWriter, id, name string, data any) {
	if id != "" {
		_, _ = fmt.Fprintf(w, "id: %s\n", id)
	}
	if name != "" {
		_, _ = fmt.Fprintf(w, "event: %s\n", name)
	}
	b, _ := json.Marshal(data)
	_, _ = fmt.Fprintf(w, "data: %s\n\n", b)
}

// eventView is an event as a consumer reads it: its type, topic, job (by
// its public id), attempt and time, and what it carries (a completed job's
// result, a failure's error, a progress), "cut" when it was cut at 1 KiB.
func eventView(ev *job.Event) gin.H {
	v := gin.H{"type": ev.Type, "topic": ev.Topic, "id": job.PublicID(ev.ClientID, ev.Job), "internal_id": ev.Job,
		"attempt": ev.Attempt, "at": ev.At().UTC().Format(time.RFC3339Nano)}
	if ev.Detail != "" {
		name := "detail"
		switch ev.Type {
		case "completed":
			name = "result"
		case "failed", "dead":
			name = "error"
		case "progress":
			name = "progress"
		}
		if name == "error" || name == "detail" || ev.Cut || !json.Valid([]byte(ev.Detail)) {
			v[name] = ev.Detail
		} else {
			v[name] = json.RawMessage(ev.Detail)
		}
	}
	if ev.Cut {
		v["cut"] = true
	}
	return v
}

// encodePositions is an event's id: each bucket's last event id,
// "b:ms-seq", comma-separated, buckets in order.
func encodePositions(pos map[int]string) string {
	buckets := make([]int, 0, len(pos))
	for b := range pos {
		buckets = append(buckets, b)
	}
	slices.Sort(buckets)
	parts := make([]string, len(buckets))
	for i, b := range buckets {
		parts[i] = strconv.Itoa(b) + ":" + pos[b]
	}
	return strings.Join(parts, ",")
}

// parsePositions reads an id encodePositions wrote ("" : none).
func parsePositions(id string) (map[int]string, error) {
	out := map[int]string{}
	if id == "" {
		return out, nil
	}
	if len(id) > 4096 {
		return nil, fmt.Errorf("%w: Last-Event-ID is %d bytes: not one this broker sent", errBadRequest, len(id))
	}
	for _, part := range strings.Split(id, ",") {
		b, pos, ok := strings.Cut(part, ":")
		n, err := strconv.Atoi(b)
		if !ok || err != nil || n < 0 || n > 1<<16 || !job.ValidEventID(pos) {
			return nil, fmt.Errorf("%w: Last-Event-ID %q is not one this broker sent (bucket:ms-seq, comma-separated)", errBadRequest, clipText(id))
		}
		out[n] = pos
	}
	return out, nil
}

// splitList splits comma-separated values and drops empty ones.
func splitList(values []string) []string {
	var out []string
	for _, v := range values {
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}
