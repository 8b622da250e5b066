package livetest_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/client"
	"github.com/gmq/gmq/internal/cutproxy"
)

// withEvents sets events = true on topic.
func withEvents(t *testing.T, b *brokertest.Broker, topic string) {
	t.Helper()
	brokertest.MustCall(t, 200, "PUT", b.URL+"/api/v1/topics/"+topic+"/config", `{"events": true}`)
}

// pulled is an events stream pulled one event at a time (iter.Pull): the
// stream is suspended between two, as a consumer busy with an event holds
// it. Each next runs on a goroutine, so the test can wait with a deadline.
type pulled struct {
	next    func() (client.Event, error, bool)
	pending chan pull // the next under way, if any
	readies atomic.Int32
	ready   chan struct{} // a token each time a connection is in place
}

type pull struct {
	ev  client.Event
	err error
	ok  bool
}

// pullEvents opens c.Events(opts) (its OnReady is the test's); it is stopped
// when the test ends.
func pullEvents(t *testing.T, c *client.Client, opts client.EventsOptions) *pulled {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	p := &pulled{ready: make(chan struct{}, 100)}
	opts.OnReady = func() {
		p.readies.Add(1)
		p.ready <- struct{}{}
	}
	var seq iter.Seq2[client.Event, error] = c.Events(ctx, opts)
	next, stop := iter.Pull2(seq)
	p.next = next
	t.Cleanup(func() {
		cancel()
		if p.pending != nil {
			select {
			case <-p.pending:
			case <-time.After(10 * time.Second):
				t.Error("the events stream did not end within 10 s of its context")
				return
			}
		}
		stop()
	})
	return p
}

// pull starts a next unless one is under way.
func (p *pulled) pull() {
	if p.pending != nil {
		return
	}
	p.pending = make(chan pull, 1)
	go func(out chan<- pull) {
		ev, err, ok := p.next()
		out <- pull{ev, err, ok}
	}(p.pending)
}

// awaitReady waits up to 10 s for a connection in place.
func (p *pulled) awaitReady(t *testing.T) {
	t.Helper()
	p.pull()
	select {
	case <-p.ready:
	case <-time.After(10 * time.Second):
		t.Fatal("the events stream was not ready within 10 s")
	}
}

// event is the stream's next event, within 10 s.
func (p *pulled) event(t *testing.T) client.Event {
	t.Helper()
	p.pull()
	select {
	case got := <-p.pending:
		p.pending = nil
		if got.err != nil || !got.ok {
			t.Fatalf("the events stream ended: %v", got.err)
		}
		return got.ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10 s")
		return client.Event{}
	}
}

// expect requires ev to be of type typ, for job id at attempt.
func expect(t *testing.T, ev client.Event, typ, topic, id string, attempt int) {
	t.Helper()
	if ev.Type != typ || ev.Topic != topic || ev.ID != id || ev.Attempt != attempt || ev.InternalID == 0 || ev.At.IsZero() ||
		ev.EventID == "" {
		t.Fatalf("event %+v; want %s of %s/%s at attempt %d", ev, typ, topic, id, attempt)
	}
}

// Events sees a job pushed, reserved and completed with its result; when
// its connection is cut (the iterator suspended after the reserved event),
// the ack and a push made meanwhile come after it connects again with the
// last event's id, each once, and then what follows.
func TestEventsResumeAfterADrop(t *testing.T) {
	b := broker(t)
	withEvents(t, b, "mail")
	proxy := cutproxy.Start(t, b.URL)
	c := client.New(b.URL, nil)
	ctx := context.Background()
	events := pullEvents(t, client.New(proxy.URL, nil), client.EventsOptions{Topics: []string{"mail"}})
	events.awaitReady(t)

	push := func(id string) {
		t.Helper()
		if _, err := c.Push(ctx, client.Job{ID: id, Topic: "mail", Body: "hi", TTR: 30}); err != nil {
			t.Fatal(err)
		}
	}
	push("m-1")
	expect(t, events.event(t), "pushed", "mail", "m-1", 0)
	j, err := c.Pop(ctx, []string{"mail"}, time.Second)
	if err != nil || j == nil || j.ID != "m-1" {
		t.Fatalf("pop: %+v %v", j, err)
	}
	reserved := events.event(t)
	expect(t, reserved, "reserved", "mail", "m-1", 1)

	if n := proxy.Cut(); n != 1 {
		t.Fatalf("cut %d connections; want the stream's", n)
	}
	if err := c.AckJobResult(ctx, j, map[string]string{"url": "/r/m-1"}); err != nil {
		t.Fatal(err)
	}
	push("m-2")
	completed := events.event(t)
	expect(t, completed, "completed", "mail", "m-1", 1)
	if string(completed.Result) != `{"url":"/r/m-1"}` {
		t.Fatalf("completed with %s", completed.Result)
	}
	expect(t, events.event(t), "pushed", "mail", "m-2", 0)
	push("m-3")
	expect(t, events.event(t), "pushed", "mail", "m-3", 0)
	if ids := proxy.LastEventIDs(); !slices.Equal(ids, []string{"", reserved.EventID}) || events.readies.Load() != 2 {
		t.Fatalf("connections with Last-Event-ID %q, %d ready; want none, then %q", ids, events.readies.Load(), reserved.EventID)
	}
}

// Types filters the events; a position older than the bucket keeps comes
// as a lost event, then the rest from the oldest kept; a bad request (an
// unknown type) is an error that ends the stream.
func TestEventsTypesAndLost(t *testing.T) {
	b := broker(t)
	withEvents(t, b, "reports")
	c := client.New(b.URL, nil)
	ctx := context.Background()
	for _, err := range c.Events(ctx, client.EventsOptions{Topics: []string{"reports"}, Types: []string{"bogus"}}) {
		if e := (*client.Error)(nil); !errors.As(err, &e) || e.Status != 400 {
			t.Fatalf("an unknown type: %v; want a 400", err)
		}
		break
	}
	one := 1
	for _, id := range []string{"r-1", "r-2"} {
		if _, err := c.Push(ctx, client.Job{ID: id, Topic: "reports", Body: id, TTR: 30, Retry: &client.Retry{MaxAttempts: &one}}); err != nil {
			t.Fatal(err)
		}
	}
	bucket := b.Pool.EventsBucket("reports")
	events := pullEvents(t, c, client.EventsOptions{Topics: []string{"reports"}, Types: []string{"completed", "dead"},
		LastEventID: fmt.Sprintf("%d:1-0", bucket)})
	lost := events.event(t)
	if lost.Type != client.EventLost || !slices.Equal(lost.Buckets, []int{bucket}) || lost.Error == "" || lost.EventID == "" {
		t.Fatalf("first %+v; want lost, bucket %d", lost, bucket)
	}
	for _, step := range []func(j *client.Job) error{
		func(j *client.Job) error { _, err := c.FailJob(ctx, j, "no printer"); return err },
		func(j *client.Job) error { return c.AckJobResult(ctx, j, 7) },
	} {
		j, err := c.Pop(ctx, []string{"reports"}, time.Second)
		if err != nil || j == nil {
			t.Fatalf("pop: %v", err)
		}
		if err := step(j); err != nil {
			t.Fatal(err)
		}
	}
	dead, completed := events.event(t), events.event(t)
	expect(t, dead, "dead", "reports", "r-1", 1)
	expect(t, completed, "completed", "reports", "r-2", 1)
	if dead.Error != "no printer" || string(completed.Result) != "7" {
		t.Fatalf("dead with %q, completed with %s", dead.Error, completed.Result)
	}
}
