package tcpserver

import "errors"

// ErrClose ends a connection with nothing more to say: the client quit or
// hung up, or the server is closing.
var ErrClose = errors.New("the connection ends")

// ClientErr is a request a handler refused, as its client is told it (as
// nsq's protocol.ClientErr): the answer's line, in the protocol's words,
// and whether the connection closes after it (as kestrel closes one whose
// request it cannot make sense of).
type ClientErr struct {
	Line  string
	Close bool
}

func (e *ClientErr) Error() string { return e.Line }

// StoreErr is a handler's store call that failed: its command, the cause,
// and whether the client asked for no reply (memcache's noreply). The
// front end's table of kinds (job.Kind) says how it is answered.
type StoreErr struct {
	Op      string
	Err     error
	NoReply bool
}

func (e *StoreErr) Error() string { return e.Op + ": " + e.Err.Error() }
func (e *StoreErr) Unwrap() error { return e.Err }

// Answers are how a front end tells its handlers' failures: Client writes
// a refusal's line; Store answers a store call's failure by the front
// end's table and says whether the connection reads on.
type Answers struct {
	Client func(*ClientErr)
	Store  func(*StoreErr) bool
}

// Answer writes a handler's failure (nil: none) and says whether the
// connection reads on: after a ClientErr unless it closes, after a
// StoreErr as Store says; not after ErrClose, nor after any other error
// (a handler's bug: the client starts again on a new connection).
func (a Answers) Answer(err error) bool {
	var client *ClientErr
	var store *StoreErr
	switch {
	case err == nil:
		return true
	case errors.As(err, &client):
		a.Client(client)
		return !client.Close
	case errors.As(err, &store):
		return a.Store(store)
	}
	return false
}
