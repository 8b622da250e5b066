package brokers

import (
	"bufio"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gmq/gmq/internal/redistest"
	"github.com/gmq/gmq/systemtest/harness"
)

// At Redis's maxmemory an ack with follow-ups is refused whole (503, the
// job still reserved), as a push is, while a plain ack still works; once
// memory is free again the same ack goes through.
func TestFollowUpsAtMaxmemory(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	b := harness.StartBroker(t, srv.URL())
	b.Must(201, "POST", "/api/v1/jobs", `{"id":"mm-1","topic":"mm","body":"x","ttr":600}`)
	b.Must(201, "POST", "/api/v1/jobs", `{"id":"mm-2","topic":"mm","body":"y","ttr":600}`)
	b.Must(200, "POST", "/api/v1/pop", `{"topics":["mm"],"count":2}`)
	if reply, err := srv.Do("CONFIG", "SET", "maxmemory", "1"); err != nil || reply != "+OK" {
		t.Fatalf("CONFIG SET maxmemory: %q %v", reply, err)
	}
	ack := `{"push":[{"topic":"mm-next","body":"after"}]}`
	if got := b.Must(503, "POST", "/api/v1/jobs/mm-1/ack", ack); got["error"] == nil {
		t.Fatalf("an ack with follow-ups at maxmemory: %v", got)
	}
	if j := b.Must(200, "GET", "/api/v1/jobs/mm-1", ``); j["state"] != "reserved" {
		t.Fatalf("the job after the refused ack: %v", j)
	}
	b.Must(200, "POST", "/api/v1/jobs/mm-2/ack", ``) // a plain ack frees memory: it works
	if reply, err := srv.Do("CONFIG", "SET", "maxmemory", "0"); err != nil || reply != "+OK" {
		t.Fatalf("CONFIG SET maxmemory: %q %v", reply, err)
	}
	b.Must(200, "POST", "/api/v1/jobs/mm-1/ack", ack)
	if next := b.Must(200, "GET", "/api/v1/pop?topic=mm-next&timeout=30", ``); next["body"] != "after" {
		t.Fatalf("the follow-up: %v", next)
	}
}

// A server status that refuses pushes refuses an ack with follow-ups
// (503, draining), and lets a plain ack through.
func TestFollowUpsWhileReadonly(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	b := harness.StartBroker(t, srv.URL())
	b.Must(201, "POST", "/api/v1/jobs", `{"id":"ro-1","topic":"ro","body":"x","ttr":600}`)
	b.Must(201, "POST", "/api/v1/jobs", `{"id":"ro-2","topic":"ro","body":"y","ttr":600}`)
	b.Must(200, "POST", "/api/v1/pop", `{"topics":["ro"],"count":2}`)
	b.Must(200, "PUT", "/api/v1/status", `{"status":"readonly"}`)
	if got := b.Must(503, "POST", "/api/v1/jobs/ro-1/ack", `{"push":[{"topic":"ro-next","body":"after"}]}`); !strings.Contains(fmt.Sprint(got["error"]), "readonly") {
		t.Fatalf("an ack with follow-ups while readonly: %v", got)
	}
	b.Must(200, "POST", "/api/v1/jobs/ro-2/ack", ``)
	if j := b.Must(200, "GET", "/api/v1/jobs/ro-1", ``); j["state"] != "reserved" {
		t.Fatalf("the job after the refused ack: %v", j)
	}
}

// A job's then follows its completion by any front end: here beanstalkd's
// delete of the job its connection reserved, which acks it.
func TestThenAfterABeanstalkdDelete(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	b := harness.StartBroker(t, srv.URL())
	b.Must(201, "POST", "/api/v1/jobs", `{"topic":"bt","body":"x","ttr":60,"then":[{"topic":"bt-next","body":"after the delete"}]}`)
	c := harness.SendOn(t, b.Beanstalk, "watch bt\r\nreserve\r\n")
	r := bufio.NewReader(c)
	var id string
	for _, want := range []string{"WATCHING", "RESERVED"} {
		line, err := r.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, want) {
			t.Fatalf("%q %v, want %s", line, err, want)
		}
		if want == "RESERVED" {
			id = strings.Fields(line)[1]
		}
	}
	if _, err := r.ReadString('\n'); err != nil { // the body
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("delete " + id + "\r\n")); err != nil {
		t.Fatal(err)
	}
	if line, err := r.ReadString('\n'); err != nil || line != "DELETED\r\n" {
		t.Fatalf("delete: %q %v", line, err)
	}
	if next := b.Must(200, "GET", "/api/v1/pop?topic=bt-next&timeout=30", ``); next["body"] != "after the delete" {
		t.Fatalf("the follow-up: %v", next)
	}
}

// A follow-up its topic refuses (full) is pushed by a bucket's timer once
// the topic has room, whichever broker's, and reaches a consumer in a long
// poll on the other broker that has waited longer than every timeout (the
// grace, the backoff's first tries, 5 s): two brokers, one Redis.
func TestPutOffFollowUpReachesALongPoll(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	a := harness.StartBroker(t, srv.URL())
	b := harness.StartBroker(t, srv.URL())
	a.Must(200, "PUT", "/api/v1/topics/lp-next/config", `{"max_items":1}`)
	a.Must(201, "POST", "/api/v1/jobs", `{"id":"lp-filler","topic":"lp-next","body":"filler","ttr":600}`)
	b.Must(200, "GET", "/api/v1/pop?topic=lp-next", ``) // held: the topic stays full
	a.Must(201, "POST", "/api/v1/jobs", `{"id":"lp-1","topic":"lp","body":"x","ttr":600}`)
	a.Must(200, "GET", "/api/v1/pop?topic=lp", ``)
	a.Must(200, "POST", "/api/v1/jobs/lp-1/ack", `{"push":[{"topic":"lp-next","body":"after lp-1"}]}`)
	if st := a.Must(200, "GET", "/api/v1/stats", ``); st["current_followups"] != 1.0 {
		t.Fatalf("the follow-up its full topic refused: %v waiting, want 1", st["current_followups"])
	}
	polled := make(chan harness.Answer, 1)
	started := time.Now()
	go func() { // ends with its long poll, at the latest its timeout
		got, _ := b.Do("GET", "/api/v1/pop?topic=lp-next&timeout=60", ``)
		polled <- got
	}()
	time.Sleep(6 * time.Second) // the poll outlasts 5 s, the grace and the first tries: the topic stays full meanwhile
	a.Must(200, "POST", "/api/v1/jobs/lp-filler/ack", ``)
	got := <-polled
	if got.Code != 200 || got.Body["body"] != "after lp-1" || time.Since(started) < 6*time.Second {
		t.Fatalf("the long poll on the other broker: %d %v after %v", got.Code, got.Body, time.Since(started))
	}
	// A follow-up is pushed first and taken off the waiting ones after, in
	// two steps (its marker keeps a second push out), so the long poll can
	// have it a moment before the count drops.
	harness.WaitUntil(t, "no follow-up waiting once it was pushed", func() bool {
		return a.Must(200, "GET", "/api/v1/stats", ``)["current_followups"] == 0.0
	})
}
