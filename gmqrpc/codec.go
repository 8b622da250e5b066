package gmqrpc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/rpc"
	"sync"
	"time"

	"github.com/gmq/gmq/internal/budget"
	"github.com/gmq/gmq/internal/tcpserver"
)

// codec is the server side of JSON-RPC 1.0 as Go's net/rpc/jsonrpc speaks it
// (a request {"method", "params": [arg], "id"}, a response {"id", "result",
// "error"}), with the bounds of gmq's other ports, which jsonrpc's own codec
// cannot give: its decoder reads ahead into a buffer that grows to the
// largest request and never shrinks, and allocates it before the bytes
// arrive. Here each request is framed on its own (readValue) into memory
// reserved from the shared body budget as its bytes arrive; the reservation
// is held until the call's response is written, so that the calls a client
// pipelines count too. A connection reads through a small buffer; a request,
// once its first byte came, must arrive within readTimeout (an idle
// connection waits as long as it likes); one over limit, or one that cannot
// get memory within budget.Wait, is answered with an error and the
// connection closed.
type codec struct {
	codecOptions
	conn net.Conn
	r    *bufio.Reader
	enc  *json.Encoder
	ctx  context.Context // ends a wait for budget

	params json.RawMessage // the request being read: ReadRequestHeader sets it, ReadRequestBody reads it

	mu      sync.Mutex
	seq     uint64
	pending map[uint64]pendingCall // by sequence number, until the response is written
	closed  bool
}

// pendingCall is a request read and not yet answered: the client's id (any
// JSON value), and the budget units its bytes hold.
type pendingCall struct {
	id    json.RawMessage
	units int
}

// request is a JSON-RPC request as it arrives.
type request struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	ID     json.RawMessage `json:"id"`
}

// response is what WriteResponse sends: Result and Error are null when unset.
type response struct {
	ID     json.RawMessage `json:"id"`
	Result any             `json:"result"`
	Error  any             `json:"error"`
}

// codecOptions are what every connection's codec shares.
type codecOptions struct {
	limit       int           // the largest request, bytes
	readTimeout time.Duration // for a request once begun (0: none)
	budget      *budget.Budget
	refused     *tcpserver.Burst // a log line per burst of refused requests
}

func newCodec(ctx context.Context, conn net.Conn, opts codecOptions) *codec {
	return &codec{codecOptions: opts, conn: conn, r: bufio.NewReaderSize(conn, tcpserver.ReadBuffer),
		enc: json.NewEncoder(conn), ctx: ctx, pending: map[uint64]pendingCall{}}
}

// errTooLarge: a request ran past the limit.
var errTooLarge = tcpserver.ErrTooLarge

// errNotRequest: the bytes are not a JSON object.
var errNotRequest = tcpserver.Malformed("not a JSON-RPC request")

func (c *codec) ReadRequestHeader(r *rpc.Request) error {
	hold := budget.Hold{Budget: c.budget, Ctx: c.ctx}
	data, err := readValue(c.r, c.limit, &hold, func(begun bool) { hold.Until = c.deadline(begun) })
	if err == nil {
		var req request
		if err = json.Unmarshal(data, &req); err != nil {
			err = fmt.Errorf("%w: %w", errNotRequest, err)
		} else {
			c.params = req.Params
			r.ServiceMethod = req.Method
			c.mu.Lock()
			c.seq++
			r.Seq = c.seq
			c.pending[c.seq] = pendingCall{id: req.ID, units: hold.Take()}
			c.mu.Unlock()
		}
	}
	hold.Release() // nothing, unless the request was refused
	return c.refuse(err)
}

// deadline starts (true) or ends a request's read deadline, and returns it
// (zero: none), which bounds the request's waits for body memory too.
func (c *codec) deadline(begun bool) time.Time {
	if c.readTimeout <= 0 {
		return time.Time{}
	}
	at := time.Time{}
	if begun {
		at = time.Now().Add(c.readTimeout)
	}
	_ = c.conn.SetReadDeadline(at) // a connection that refuses it is closed anyway
	return at
}

// refuse tells the client why its request is refused, for the errors it
// should hear of, and turns every error into io.EOF: net/rpc then closes
// the connection quietly (its request was not read whole, so nothing after
// it can be framed).
func (c *codec) refuse(err error) error {
	if err == nil {
		return nil
	}
	var why string
	switch tcpserver.FaultOf(err) {
	case tcpserver.FaultTooLarge:
		why = fmt.Sprintf("request too large: over %d bytes ([jobs] max_body)", c.limit)
	case tcpserver.FaultBusy, tcpserver.FaultMalformed:
		why = err.Error()
	default:
		return io.EOF // the client went away, or took longer than read_timeout
	}
	c.refused.Event("remote", c.conn.RemoteAddr().String(), "err", err)
	answer, _ := json.Marshal(response{ID: null, Error: why}) // a string: it marshals
	_ = c.conn.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = c.conn.Write(append(answer, '\n')) // one write: calls answering meanwhile use their own
	return io.EOF
}

var null = json.RawMessage("null")

func (c *codec) ReadRequestBody(x any) error {
	params := c.params
	c.params = nil // the request's bytes are garbage once read
	if x == nil {
		return nil
	}
	if params == nil {
		return errors.New("the request has no params")
	}
	return json.Unmarshal(params, &[1]any{x}) // params is an array of the one argument
}

// WriteResponse answers a call and gives back the budget its request held.
// net/rpc calls it once per request read, one call at a time.
func (c *codec) WriteResponse(r *rpc.Response, x any) error {
	c.mu.Lock()
	call, ok := c.pending[r.Seq]
	delete(c.pending, r.Seq)
	c.mu.Unlock()
	if !ok {
		return fmt.Errorf("json-rpc: no request %d to answer", r.Seq)
	}
	c.budget.Give(call.units)
	resp := response{ID: call.id}
	if resp.ID == nil {
		resp.ID = null
	}
	if r.Error == "" {
		resp.Result = x
	} else {
		resp.Error = r.Error
	}
	return c.enc.Encode(resp)
}

// Close closes the connection and gives back what unanswered requests held.
func (c *codec) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	for seq, call := range c.pending {
		c.budget.Give(call.units)
		delete(c.pending, seq)
	}
	return c.conn.Close()
}
