package livetest_test

import (
	"context"
	"testing"
	"time"

	"github.com/gmq/gmq/client"
	"github.com/gmq/gmq/config"
)

// The Go client's waiting calls (pop, batch pop, ack then pop, batch ack then
// pop) wait their whole timeout and come back empty, against a broker whose
// request_timeout is a third of the wait: the wait is the caller's, the
// request timeout bounds only the work around it (issue 20: every long poll
// of request_timeout or more answered 503). The client's own timeout is
// shorter than the wait too: it is added to the wait, never cuts it.
func TestLongPollPastRequestTimeout(t *testing.T) {
	const requestTimeout, wait = 400 * time.Millisecond, 1200 * time.Millisecond
	b := brokerWithToken(t, func(c *config.Config) { c.RequestTimeout = requestTimeout })
	c := client.NewWithOptions(b.URL, client.Options{Token: token, Timeout: 2 * requestTimeout})
	ctx := context.Background()
	held := func(t *testing.T, topic string) *client.Job {
		if _, err := c.Push(ctx, client.Job{Topic: topic, Body: "x"}); err != nil {
			t.Fatal(err)
		}
		j, err := c.Pop(ctx, []string{topic}, time.Second)
		if err != nil || j == nil {
			t.Fatalf("pop: %v %v", j, err)
		}
		return j
	}
	for _, call := range []struct {
		name string
		call func(t *testing.T) (empty bool, err error)
	}{
		{"Pop", func(*testing.T) (bool, error) { j, err := c.Pop(ctx, []string{"go-pop"}, wait); return j == nil, err }},
		{"PopMany", func(*testing.T) (bool, error) {
			j, err := c.PopMany(ctx, []string{"go-popmany"}, 3, wait)
			return len(j) == 0, err
		}},
		{"AckAndPop", func(t *testing.T) (bool, error) {
			h := held(t, "go-held-1")
			j, err := c.AckAndPop(ctx, h.ID, h.Attempt, []string{"go-ackandpop"}, wait)
			return j == nil, err
		}},
		{"AckMany", func(t *testing.T) (bool, error) {
			a, err := c.AckMany(ctx, []client.Job{*held(t, "go-held-2")}, []string{"go-ackmany"}, 2, wait)
			return len(a.Next) == 0 && len(a.IDs) == 1, err
		}},
	} {
		t.Run(call.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			empty, err := call.call(t)
			if took := time.Since(start); err != nil || !empty || took < wait-50*time.Millisecond {
				t.Errorf("empty %v, err %v, after %v; want nothing after the %v wait", empty, err, took, wait)
			}
		})
	}
}
