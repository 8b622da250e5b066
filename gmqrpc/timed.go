package gmqrpc

import (
	"net/rpc"
	"sync"
	"time"

	"github.com/gmq/gmq/internal/tcpserver"
)

// timedCodec tells Options.Observe how long each call took, from reading
// its request to writing its response (net/rpc runs a connection's calls
// concurrently, so they are matched by sequence number).
type timedCodec struct {
	rpc.ServerCodec
	observe func(op, code string, took time.Duration)
	mu      sync.Mutex
	started map[uint64]timedCall
}

type timedCall struct {
	op    string
	start time.Time
}

// methods are the calls gmq serves: anything else is "other", so a client
// cannot make new series.
var methods = map[string]bool{"Service.Push": true, "Service.Pop": true, "Service.Ack": true, "Service.Fail": true}

func (c *timedCodec) ReadRequestHeader(r *rpc.Request) error {
	err := c.ServerCodec.ReadRequestHeader(r)
	if err == nil {
		op := r.ServiceMethod
		if !methods[op] {
			op = "other"
		}
		c.mu.Lock()
		c.started[r.Seq] = timedCall{op, time.Now()}
		c.mu.Unlock()
	}
	return err
}

func (c *timedCodec) WriteResponse(r *rpc.Response, body any) error {
	c.mu.Lock()
	call, ok := c.started[r.Seq]
	delete(c.started, r.Seq)
	c.mu.Unlock()
	if ok {
		code := tcpserver.OK // "empty" is a pop's answer, not a failure
		if r.Error != "" && r.Error != "empty" {
			code = outcomeOf(r.Error)
		}
		c.observe(call.op, code, time.Since(call.start))
	}
	return c.ServerCodec.WriteResponse(r, body)
}
