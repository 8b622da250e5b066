package web_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
)

// sse is one Server-Sent Event as a stream sent it.
type sse struct {
	id, name string
	data     map[string]any
}

// openEvents opens an events stream and returns its events as they come;
// the stream closes with the test.
func openEvents(t *testing.T, url, lastID string) <-chan sse {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	out := make(chan sse, 1000)
	go func() {
		defer resp.Body.Close()
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		var cur sse
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if cur.data != nil {
					out <- cur
				}
				cur = sse{}
			case strings.HasPrefix(line, "id: "):
				cur.id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "event: "):
				cur.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				_ = json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &cur.data)
			}
		}
	}()
	return out
}

// next is the stream's next event, within 10 s.
func next(t *testing.T, events <-chan sse) sse {
	t.Helper()
	select {
	case ev, ok := <-events:
		if !ok {
			t.Fatal("the stream ended")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10 s")
	}
	return sse{}
}

// The events of a topic with events = true, as Server-Sent Events: each
// transition with its job, attempt and what it carries; a topic without
// events sends none; a stream resumes from its last event's id; types
// filter; bad requests are refused before the stream begins.
func TestEventsOverHTTP(t *testing.T) {
	b := broker(t)
	api := b.URL + "/api/v1"
	mustCall(t, 200, "PUT", api+"/topics/ev/config", `{"events": true, "keep_completed": 60}`)
	mustCall(t, 400, "GET", api+"/events", ``)
	mustCall(t, 400, "GET", api+"/events?topics=ev&types=exploded", ``)
	mustCall(t, 400, "GET", api+"/events?topics=ev&last_event_id=yesterday", ``)

	events := openEvents(t, api+"/events?topics=ev,quiet", "")
	if ev := next(t, events); ev.name != "ready" {
		t.Fatalf("the stream's first event: %+v", ev)
	}
	mustCall(t, 201, "POST", api+"/jobs", `{"topic":"quiet","body":"x"}`) // no events: none sent
	mustCall(t, 201, "POST", api+"/jobs", `{"id":"ev-1","topic":"ev","body":"x"}`)
	j := mustCall(t, 200, "GET", api+"/pop?topic=ev", ``)
	mustCall(t, 200, "POST", api+"/jobs/ev-1/progress", fmt.Sprintf(`{"attempt":%v,"progress":50}`, j["attempt"]))
	mustCall(t, 200, "POST", api+"/jobs/ev-1/ack", fmt.Sprintf(`{"attempt":%v,"result":{"ok":true}}`, j["attempt"]))
	var last string
	for _, want := range []string{"pushed", "reserved", "progress", "completed"} {
		ev := next(t, events)
		if ev.data["type"] != want || ev.data["id"] != "ev-1" || ev.data["topic"] != "ev" || ev.id == "" {
			t.Fatalf("event %s: %+v", want, ev)
		}
		switch want {
		case "progress":
			if ev.data["progress"] != 50.0 || ev.data["attempt"] != 1.0 {
				t.Fatalf("the progress event: %+v", ev)
			}
		case "completed":
			if fmt.Sprint(ev.data["result"]) != "map[ok:true]" {
				t.Fatalf("the completed event: %+v", ev)
			}
		}
		last = ev.id
	}

	// Resumed from the last id: what happened meanwhile, and nothing before.
	mustCall(t, 201, "POST", api+"/jobs", `{"id":"ev-2","topic":"ev","body":"x"}`)
	mustCall(t, 201, "POST", api+"/jobs", `{"id":"ev-3","topic":"ev","body":"x"}`)
	resumed := openEvents(t, api+"/events?topics=ev", last)
	next(t, resumed) // ready
	for _, want := range []string{"ev-2", "ev-3"} {
		if ev := next(t, resumed); ev.data["type"] != "pushed" || ev.data["id"] != want {
			t.Fatalf("resumed: %+v, want %s pushed", ev, want)
		}
	}

	// Only the types asked for.
	failures := openEvents(t, api+"/events?topics=ev&types=failed,dead", "")
	next(t, failures) // ready
	j = mustCall(t, 200, "GET", api+"/pop?topic=ev", ``)
	mustCall(t, 200, "POST", fmt.Sprintf("%s/jobs/%s/fail", api, j["id"]), fmt.Sprintf(`{"attempt":%v,"error":"no ink"}`, j["attempt"]))
	if ev := next(t, failures); ev.data["type"] != "failed" || ev.data["error"] != "no ink" || ev.data["id"] != j["id"] {
		t.Fatalf("a failure: %+v", ev)
	}
}

// A consumer that asks for a position its bucket's stream no longer holds
// (about 10,000 events are kept a bucket) is told so ("lost"), and the
// stream goes on from the oldest event held.
func TestEventsLostWhenTrimmed(t *testing.T) {
	b := broker(t)
	api := b.URL + "/api/v1"
	mustCall(t, 200, "PUT", api+"/topics/busy/config", `{"events": true}`)
	events := openEvents(t, api+"/events?topics=busy", "")
	next(t, events) // ready
	mustCall(t, 201, "POST", api+"/jobs", `{"topic":"busy","body":"first"}`)
	first := next(t, events)
	// 11,000 events more, past the stream's bound, as the scripts write
	// them (the broker's tests take batches of 10).
	bucket, _, _ := strings.Cut(first.id, ":")
	key := "gmq:{b" + bucket + "}:events"
	for range 11000 {
		if _, err := brokertest.Redis().Do("XADD", key, "MAXLEN", "~", "10000", "*", "type", "pushed", "topic", "busy",
			"job", "0000000000000001", "cid", "", "attempt", "0", "detail", "", "cut", "0"); err != nil {
			t.Fatal(err)
		}
	}
	resumed := openEvents(t, api+"/events?topics=busy", first.id)
	next(t, resumed) // ready
	if ev := next(t, resumed); ev.name != "lost" {
		t.Fatalf("resumed past the bound: %+v, want lost", ev)
	}
	if ev := next(t, resumed); ev.data["type"] != "pushed" {
		t.Fatalf("after lost: %+v, want the oldest event held", ev)
	}
}
