package gmqrpc

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/rpc"
	"net/rpc/jsonrpc"
	"sync"
	"time"
)

// errTooLarge ends a connection whose request ran past Options.MaxRequest.
var errTooLarge = errors.New("request too large")

// requestReader is the connection as jsonrpc's decoder reads it, failing once
// one request has run past limit bytes. The count starts again with each
// request (limitedCodec.ReadRequestHeader, where jsonrpc decodes the whole
// request). The decoder reads ahead, so a request may be counted with part of
// the next: the bound is loose by one read, but firm, and so is the memory
// the decoder's buffer grows to.
//
// A request, once its first byte came, must arrive within readTimeout (0: no
// limit): a client that begins one and never finishes is cut off, while an
// idle connection waits as long as it likes. (Bytes the decoder read ahead
// of the next request are not timed until more of it comes.)
type requestReader struct {
	r           net.Conn
	n, limit    int
	readTimeout time.Duration
}

func (l *requestReader) Read(p []byte) (int, error) {
	if l.n >= l.limit {
		return 0, errTooLarge
	}
	if len(p) > l.limit-l.n {
		p = p[:l.limit-l.n]
	}
	if l.n == 0 && l.readTimeout > 0 { // idle until a request begins
		if n, err := l.r.Read(p[:1]); n == 0 {
			return 0, err
		}
		l.n = 1
		_ = l.r.SetReadDeadline(time.Now().Add(l.readTimeout)) // a connection that refuses it is closed anyway
		return 1, nil
	}
	n, err := l.r.Read(p)
	l.n += n
	return n, err
}

// done ends a request's read deadline: the next request starts afresh.
func (l *requestReader) done() {
	l.n = 0
	if l.readTimeout > 0 {
		_ = l.r.SetReadDeadline(time.Time{})
	}
}

// limitedCodec is jsonrpc's server codec over a requestReader. A request past
// the limit is answered with a JSON-RPC error and the connection is closed.
type limitedCodec struct {
	rpc.ServerCodec
	in   *requestReader
	conn net.Conn
	log  *slog.Logger
}

func newLimitedCodec(conn net.Conn, limit int, readTimeout time.Duration, log *slog.Logger) *limitedCodec {
	in := &requestReader{r: conn, limit: limit, readTimeout: readTimeout}
	rw := struct {
		io.Reader
		io.Writer
		io.Closer
	}{in, conn, conn}
	return &limitedCodec{ServerCodec: jsonrpc.NewServerCodec(rw), in: in, conn: conn, log: log}
}

func (c *limitedCodec) ReadRequestHeader(r *rpc.Request) error {
	c.in.n = 0
	err := c.ServerCodec.ReadRequestHeader(r) // jsonrpc decodes the whole request here
	if err == nil {
		c.in.done()
	}
	if errors.Is(err, errTooLarge) {
		c.log.Info("json-rpc request too large: connection closed", "remote", c.conn.RemoteAddr().String(), "limit", c.in.limit)
		_ = c.conn.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = fmt.Fprintf(c.conn, `{"id":null,"result":null,"error":"request too large: over %d bytes ([jobs] max_body)"}`+"\n", c.in.limit)
		return io.EOF // net/rpc closes the connection quietly on EOF (it logs anything else to the standard logger)
	}
	return err
}

// timedCodec tells Options.Observe how long each call took, from reading
// its request to writing its response (net/rpc runs a connection's calls
// concurrently, so they are matched by sequence number).
type timedCodec struct {
	rpc.ServerCodec
	observe func(op string, took time.Duration)
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
		c.observe(call.op, time.Since(call.start))
	}
	return c.ServerCodec.WriteResponse(r, body)
}
