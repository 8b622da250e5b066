package client

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"
)

// stream is one scripted answer of a fake events stream: its status and
// what it writes, then it ends, or hangs until the client goes (hang).
type stream struct {
	status int
	body   string
	hang   bool
}

// fakeEvents answers the n-th connection with the n-th of its streams (the
// last once they run out) and records each connection's Last-Event-ID.
type fakeEvents struct {
	mu      sync.Mutex
	streams []stream
	lastIDs []string
	query   string
}

func (f *fakeEvents) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.lastIDs = append(f.lastIDs, r.Header.Get("Last-Event-ID"))
	f.query = r.URL.RawQuery
	s := f.streams[0]
	if len(f.streams) > 1 {
		f.streams = f.streams[1:]
	}
	f.mu.Unlock()
	if s.status == http.StatusOK {
		w.Header().Set("Content-Type", "text/event-stream")
	}
	w.WriteHeader(s.status)
	fmt.Fprint(w, s.body)
	w.(http.Flusher).Flush()
	if s.hang {
		<-r.Context().Done()
	}
}

func (f *fakeEvents) ids() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.lastIDs)
}

const (
	ready     = "event: ready\ndata: {\"topics\":[\"mail\"]}\n\n: keep-alive\n\n"
	pushedOne = "id: 1:5-0\ndata: {\"type\":\"pushed\",\"topic\":\"mail\",\"id\":\"m-1\",\"internal_id\":7,\"attempt\":0,\"at\":\"2026-01-02T03:04:05.006Z\"}\n\n"
)

// collect ranges over c.Events until it has n events or an error, within 5 s.
func collect(t *testing.T, c *Client, opts EventsOptions, n int) ([]Event, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var got []Event
	for ev, err := range c.Events(ctx, opts) {
		if err != nil {
			return got, err
		}
		if got = append(got, ev); len(got) == n {
			return got, nil
		}
	}
	t.Fatalf("the events ended after %d of %d events, with no error", len(got), n)
	return nil, nil
}

// Events reads the broker's stream (a ready event, comments, several data
// lines, a lost event, names it does not know), and connects again with
// the last event's id after a lagging end, a dropped connection, a silent
// one (its idle timeout) and a 503, and not after a 400.
func TestEventsReconnects(t *testing.T) {
	f := &fakeEvents{streams: []stream{
		{status: 200, body: ready + pushedOne + "event: lagging\ndata: {\"error\":\"behind\"}\n\n"},
		{status: 200, body: ready + "id: 1:6-0\nevent: lost\ndata: {\"buckets\":[1],\n" +
			"data: \"error\":\"missed\"}\n\nevent: shiny\ndata: {}\n\n"}, // dropped after this
		{status: 503, body: `{"error":"redis is down"}`},
		{status: 200, body: ready + "id: 1:7-0\ndata: {\"type\":\"completed\",\"topic\":\"mail\",\"id\":\"m-1\",\"attempt\":1," +
			"\"result\":{\"url\":\"/r/1\"},\"detail\":\"x\"}\n\n", hang: true}, // silent after this
		{status: 200, body: ready + "id: 1:8-0\ndata: {\"type\":\"reserved\",\"id\":\"m-2\",\"detail\":\"host-1\"}\n\n", hang: true},
	}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	c := NewWithOptions(srv.URL, Options{MaxBackoff: 10 * time.Millisecond})
	readies := 0
	got, err := collect(t, c, EventsOptions{Topics: []string{"mail"}, Types: []string{"completed", "pushed"},
		IdleTimeout: 300 * time.Millisecond, OnReady: func() { readies++ }}, 4)
	if err != nil {
		t.Fatal(err)
	}
	if f.query != "topics=mail&types=completed%2Cpushed" {
		t.Errorf("query %q", f.query)
	}
	want := []struct{ typ, eventID string }{{"pushed", "1:5-0"}, {EventLost, "1:6-0"}, {"completed", "1:7-0"}, {"reserved", "1:8-0"}}
	for i, w := range want {
		if got[i].Type != w.typ || got[i].EventID != w.eventID {
			t.Errorf("event %d: %+v; want %s at %s", i, got[i], w.typ, w.eventID)
		}
	}
	if got[0].ID != "m-1" || got[0].InternalID != 7 || !got[0].At.Equal(time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.UTC)) {
		t.Errorf("pushed: %+v", got[0])
	}
	if !slices.Equal(got[1].Buckets, []int{1}) || got[1].Error != "missed" {
		t.Errorf("lost: %+v", got[1])
	}
	if string(got[2].Result) != `{"url":"/r/1"}` || got[2].Detail != "x" || got[3].Detail != "host-1" {
		t.Errorf("completed %+v, reserved %+v", got[2], got[3])
	}
	if ids := f.ids(); !slices.Equal(ids, []string{"", "1:5-0", "1:6-0", "1:6-0", "1:7-0"}) || readies != 4 {
		t.Errorf("connections with Last-Event-ID %q, %d ready; want \"\", 1:5-0, 1:6-0 twice (after a 503), 1:7-0, and 4 ready", ids, readies)
	}

	f.streams = []stream{{status: 400, body: `{"error":"unknown event type \"bogus\""}`}}
	_, err = collect(t, c, EventsOptions{Topics: []string{"mail"}, Types: []string{"bogus"}}, 1)
	if status(err) != http.StatusBadRequest {
		t.Fatalf("a 400: %v", err)
	}
}

// A consumer that stops ranging ends the stream: its connection is closed.
func TestEventsStops(t *testing.T) {
	f := &fakeEvents{streams: []stream{{status: 200, body: ready + pushedOne + pushedOne, hang: true}}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	c := New(srv.URL, nil)
	for ev, err := range c.Events(context.Background(), EventsOptions{Topics: []string{"mail"}}) {
		if err != nil || ev.Type != "pushed" {
			t.Fatalf("%+v %v", ev, err)
		}
		break
	}
	if ids := f.ids(); len(ids) != 1 {
		t.Fatalf("%d connections; want 1", len(ids))
	}
}
