package load

import (
	"context"
	"errors"
	"fmt"
	"net/http"
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

func (c *beanstalkClient) Put(_ context.Context, body []byte) error {
	_, err := c.tube.Put(body, 1024, 0, time.Minute)
	return err
}

func (c *beanstalkClient) PopAck(_ context.Context) error {
	id, _, err := c.watch.Reserve(10 * time.Second)
	if err != nil {
		return fmt.Errorf("reserve: %w", err)
	}
	return c.conn.Delete(id)
}

func (c *beanstalkClient) Close() error { return c.conn.Close() }

// HTTP dials clients of gmq's HTTP API at baseURL.
func HTTP(baseURL string) Dialer {
	// Keep a connection per client alive (the default keeps two per host).
	shared := client.New(baseURL, &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024}})
	return func(topic string) (Client, error) { return &httpClient{c: shared, topic: topic}, nil }
}

type httpClient struct {
	c     *client.Client
	topic string
}

func (h *httpClient) Put(ctx context.Context, body []byte) error {
	_, err := h.c.Push(ctx, client.Job{Topic: h.topic, Body: string(body), TTR: 60})
	return err
}

func (h *httpClient) PopAck(ctx context.Context) error {
	job, err := h.c.Pop(ctx, []string{h.topic}, 10*time.Second)
	if err != nil {
		return err
	}
	if job == nil {
		return errors.New("pop: no job within 10s")
	}
	return h.c.Ack(ctx, job.ID, job.Attempt)
}

func (h *httpClient) Close() error { return nil }

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

func (h *chainedClient) PopAck(ctx context.Context) error {
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
