package tcpserver

import (
	"context"
	"log/slog"
	"net"
	"time"

	"github.com/gmq/gmq/internal/budget"
)

// Options are what every TCP front end (beanstalkd's protocol, kestrel's
// three, JSON-RPC) is given alike; each embeds them in its own Options
// beside what only it has.
type Options struct {
	// RequestTimeout bounds the store calls a request makes (a reserve or
	// a get: plus its wait).
	RequestTimeout time.Duration
	// ReadTimeout bounds how long a request, once begun, may take to
	// arrive (0: no limit); an idle connection waits as long as it likes.
	ReadTimeout time.Duration
	// Budget is the memory of request bodies, shared with every port
	// ([server] body_memory; nil: none).
	Budget *budget.Budget
	// Observe, when set, is told how long each request took and how it
	// ended (for metrics).
	Observe func(op, code string, took time.Duration)
	// Log is where the front end logs; nil: nowhere.
	Log *slog.Logger
}

// Logger is o's Log, or one that discards when none is set.
func (o Options) Logger() *slog.Logger {
	if o.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return o.Log
}

// Front is what a TCP front end's server shares with the others: the
// accept loop and its connections, and the context that Close cancels
// before it closes them, so that a request waiting for a job (a reserve,
// a get) ends at once. Embedded in the front end's Server, it gives the
// broker.FrontEnd methods Serve, Close, Connections and Refuse; a front
// end with more to end on Close has its own Close that calls Front's.
type Front struct {
	tcp     *Server
	ctx     context.Context
	cancel  context.CancelFunc
	refusal []byte
}

// NewFront returns the accept loop that runs serveConn for each
// connection; refusal is what a client over the connection limit is told
// before it is closed ("": nothing, for a protocol that has no words for
// it before a request).
func NewFront(serveConn func(net.Conn), log *slog.Logger, refusal string) *Front {
	ctx, cancel := context.WithCancel(context.Background())
	return &Front{tcp: New(serveConn, log), ctx: ctx, cancel: cancel, refusal: []byte(refusal)}
}

// Context is cancelled when Close begins.
func (f *Front) Context() context.Context { return f.ctx }

// Serve accepts connections until Close; it returns nil after Close.
func (f *Front) Serve(ln net.Listener) error { return f.tcp.Serve(ln) }

// Close ends waiting requests (Context), stops accepting, closes every
// connection and waits for their handlers to return.
func (f *Front) Close() {
	f.cancel()
	f.tcp.Close()
}

// Connections is how many clients are connected now.
func (f *Front) Connections() int { return f.tcp.Connections() }

// Refuse tells a client over the connection limit why it is closed.
func (f *Front) Refuse(c net.Conn) {
	if len(f.refusal) > 0 {
		_, _ = c.Write(f.refusal)
	}
}
