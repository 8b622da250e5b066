package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/client"
	"github.com/gmq/gmq/config"
)

// The Go client's waiting calls (pop, batch pop, ack then pop, batch ack then
// pop) wait their whole timeout and come back empty, against a broker whose
// request_timeout is a third of the wait: the wait is the caller's, the
// request timeout bounds only the work around it (issue 20: every long poll
// of request_timeout or more answered 503).
func TestClientsLongPollPastRequestTimeout(t *testing.T) {
	const requestTimeout, wait = 400 * time.Millisecond, 1200 * time.Millisecond
	b := brokertest.Fresh(t, func(c *config.Config) { c.RequestTimeout = requestTimeout })
	t.Run("go", func(t *testing.T) {
		t.Parallel()
		c := client.New(b.URL, nil)
		ctx := context.Background()
		held := func() *client.Job {
			if _, err := c.Push(ctx, client.Job{Topic: "go-held", Body: "x"}); err != nil {
				t.Fatal(err)
			}
			j, err := c.Pop(ctx, []string{"go-held"}, time.Second)
			if err != nil || j == nil {
				t.Fatalf("pop: %v %v", j, err)
			}
			return j
		}
		calls := []struct {
			name string
			call func() (empty bool, err error)
		}{
			{"Pop", func() (bool, error) { j, err := c.Pop(ctx, []string{"go"}, wait); return j == nil, err }},
			{"PopMany", func() (bool, error) { j, err := c.PopMany(ctx, []string{"go"}, 3, wait); return len(j) == 0, err }},
			{"AckAndPop", func() (bool, error) {
				h := held()
				j, err := c.AckAndPop(ctx, h.ID, h.Attempt, []string{"go"}, wait)
				return j == nil, err
			}},
			{"AckMany", func() (bool, error) {
				a, err := c.AckMany(ctx, []client.Job{*held()}, []string{"go"}, 2, wait)
				return len(a.Next) == 0 && len(a.IDs) == 1, err
			}},
		}
		for _, call := range calls {
			start := time.Now()
			empty, err := call.call()
			if took := time.Since(start); err != nil || !empty || took < wait-50*time.Millisecond {
				t.Errorf("%s: empty %v, err %v, after %v; want nothing after the %v wait", call.name, empty, err, took, wait)
			}
		}
	})
}
