package gmqbench

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/gmq/gmq/kestrel/thrift/wire"
)

// Thrift dials clients of kestrel's thrift protocol at addr (gmq's
// kestrel/thrift front end), as Finagle's kestrel client speaks it: framed
// transport, binary protocol, one connection a client. Put is one put
// call of n items; PopAck is plain gets, each taking up to what is left
// (the items removed as they are read, ids 0), or with reliable, a get
// with auto_abort_msec of one item at a time (max_open_reads is 1), then
// its confirm: two round trips a job, as a Finagle client's reliable read.
func Thrift(addr string, reliable bool) Dialer {
	return func(topic string) (Client, error) {
		cfg := &thrift.TConfiguration{ConnectTimeout: 5 * time.Second, SocketTimeout: 30 * time.Second}
		trans := thrift.NewTFramedTransportConf(thrift.NewTSocketConf(addr, cfg), cfg)
		if err := trans.Open(); err != nil {
			return nil, fmt.Errorf("thrift %s: %w", addr, err)
		}
		return &thriftClient{trans: trans, k: wire.NewKestrelClientFactory(trans, thrift.NewTBinaryProtocolFactoryConf(cfg)),
			topic: topic, reliable: reliable}, nil
	}
}

// thriftWait is a get's timeout_msec, and a reliable read's
// auto_abort_msec: longer than any pause of a run.
const thriftWait = 10000

type thriftClient struct {
	trans    thrift.TTransport
	k        *wire.KestrelClient
	topic    string
	reliable bool
}

func (c *thriftClient) Put(ctx context.Context, body []byte, n int) error {
	items := make([][]byte, n)
	for i := range items {
		items[i] = body
	}
	put, err := c.k.Put(ctx, c.topic, items, 0)
	if err != nil {
		return fmt.Errorf("put %d: %w", n, err)
	}
	if int(put) != n {
		return fmt.Errorf("put %d: %d put", n, put)
	}
	return nil
}

func (c *thriftClient) PopAck(ctx context.Context, n int) error {
	for n > 0 {
		max, abort := int32(n), int32(0)
		if c.reliable {
			max, abort = 1, 3*thriftWait
		}
		items, err := c.k.Get(ctx, c.topic, max, thriftWait, abort)
		if err != nil {
			return fmt.Errorf("get: %w", err)
		}
		if len(items) == 0 {
			return fmt.Errorf("get: no item in %d ms", thriftWait)
		}
		if c.reliable {
			got, err := c.k.Confirm(ctx, c.topic, []int64{items[0].ID})
			if err != nil {
				return fmt.Errorf("confirm %d: %w", items[0].ID, err)
			}
			if got != 1 {
				return fmt.Errorf("confirm %d: %d confirmed", items[0].ID, got)
			}
		}
		n -= len(items)
	}
	return nil
}

func (c *thriftClient) Close() error { return c.trans.Close() }
