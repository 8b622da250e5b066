package gmqbench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/beanstalkd/go-beanstalk"
	"github.com/gmq/gmq/client"
)

// Beanstalk dials clients of beanstalkd's protocol at addr: gmq's, or the
// real beanstalkd's.
func Beanstalk(addr string) Dialer {
	return func(topic string) (Client, error) {
		conn, err := beanstalk.Dial("tcp", addr)
		if err != nil {
			return nil, err
		}
		return &beanstalkClient{conn: conn, tube: beanstalk.NewTube(conn, topic),
			watch: beanstalk.NewTubeSet(conn, topic)}, nil
	}
}

type beanstalkClient struct {
	conn  *beanstalk.Conn
	tube  *beanstalk.Tube
	watch *beanstalk.TubeSet
}

// Put puts n jobs, one command each: beanstalkd has no batches.
func (c *beanstalkClient) Put(_ context.Context, body []byte, n int) error {
	for range n {
		if _, err := c.tube.Put(body, 1024, 0, time.Minute); err != nil {
			return err
		}
	}
	return nil
}

func (c *beanstalkClient) PopAck(_ context.Context, n int) error {
	for range n {
		id, _, err := c.watch.Reserve(10 * time.Second)
		if err != nil {
			return fmt.Errorf("reserve: %w", err)
		}
		if err := c.conn.Delete(id); err != nil {
			return err
		}
	}
	return nil
}

func (c *beanstalkClient) Close() error { return c.conn.Close() }

// HTTP dials clients of gmq's HTTP API at baseURL.
func HTTP(baseURL string) Dialer {
	// Keep a connection per client alive (the default keeps two per host).
	// No retries: a benchmark reports a 503, it does not hide it in a
	// latency (the beanstalkd clients do not retry either).
	shared := client.NewWithOptions(baseURL, client.Options{Retries: -1,
		HTTPClient: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024}}})
	return func(topic string) (Client, error) { return &httpClient{c: shared, topic: topic}, nil }
}

type httpClient struct {
	c     *client.Client
	topic string
	held  []client.Job // a batch consumer's jobs, acked with its next pop
}

// Put pushes one job, or n in one batch push.
func (h *httpClient) Put(ctx context.Context, body []byte, n int) error {
	job := client.Job{Topic: h.topic, Body: string(body), TTR: 60}
	if n == 1 {
		_, err := h.c.Push(ctx, job)
		return err
	}
	_, err := h.c.PushBatch(ctx, slices.Repeat([]client.Job{job}, n))
	return err
}

// PopAck pops a job and acks it (two requests), or with n > 1 is a batch
// consumer: it pops up to n jobs a request and acks them all in the next
// request, which also pops the next batch.
func (h *httpClient) PopAck(ctx context.Context, n int) error {
	if n > 1 {
		return h.popAckBatch(ctx, n)
	}
	job, err := h.c.Pop(ctx, []string{h.topic}, 10*time.Second)
	if err != nil {
		return err
	}
	if job == nil {
		return errors.New("pop: no job within 10s")
	}
	return h.c.Ack(ctx, job.ID, job.Attempt)
}

func (h *httpClient) popAckBatch(ctx context.Context, n int) error {
	for got := 0; got < n; {
		jobs, err := nextBatch(ctx, h.c, h.held, []string{h.topic}, n-got, 10*time.Second)
		if err != nil {
			return err
		}
		if len(jobs) == 0 {
			return errors.New("pop: no job within 10s")
		}
		h.held = jobs
		got += len(jobs)
	}
	return nil
}

// nextBatch is a batch consumer's request: it acks the jobs held (all must
// be acked) and pops up to n more, or with none held only pops, waiting up
// to wait for the first.
func nextBatch(ctx context.Context, c *client.Client, held []client.Job, topics []string, n int, wait time.Duration) ([]client.Job, error) {
	if len(held) == 0 {
		return c.PopMany(ctx, topics, n, wait)
	}
	acked, err := c.AckMany(ctx, held, topics, n, wait)
	if err == nil && len(acked.Failed) > 0 {
		err = fmt.Errorf("ack %s: %d %s", acked.Failed[0].ID, acked.Failed[0].Status, acked.Failed[0].Error)
	}
	return acked.Next, err
}

// Close acks the batch still held.
func (h *httpClient) Close() error {
	if len(h.held) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := h.c.AckMany(ctx, h.held, nil, 0, 0)
	return err
}

// HTTPChained is HTTP with consumers that ack each job and pop the next in
// one request, so a job costs one round trip instead of two.
func HTTPChained(baseURL string) Dialer {
	plain := HTTP(baseURL)
	return func(topic string) (Client, error) {
		c, err := plain(topic)
		if err != nil {
			return nil, err
		}
		return &chainedClient{httpClient: c.(*httpClient)}, nil
	}
}

// chainedClient holds the job it popped last and acks it with the next pop.
type chainedClient struct {
	*httpClient
	held *client.Job
}

func (h *chainedClient) PopAck(ctx context.Context, n int) error {
	for range n {
		if err := h.popAckOne(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (h *chainedClient) popAckOne(ctx context.Context) error {
	var job *client.Job
	var err error
	if h.held == nil {
		job, err = h.c.Pop(ctx, []string{h.topic}, 10*time.Second)
	} else {
		job, err = h.c.AckAndPop(ctx, h.held.ID, h.held.Attempt, []string{h.topic}, 10*time.Second)
	}
	if err != nil {
		return err
	}
	if job == nil {
		return errors.New("pop: no job within 10s")
	}
	h.held = job
	return nil
}

// Close acks the job still held.
func (h *chainedClient) Close() error {
	if h.held == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return h.c.Ack(ctx, h.held.ID, h.held.Attempt)
}
