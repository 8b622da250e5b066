package text

import (
	"errors"

	"github.com/gmq/gmq/internal/tcpserver"
	"github.com/gmq/gmq/kestrel/answer"
)

// A handler's failure, which handle answers (conn.answer). A clientError is
// the request refused, with kestrel's message (its "Queue name
// required."), after which the connection reads on unless fatal. A
// storeError is a store call's failure, answered by its kind (storeFailure).
// errClose ends the connection with nothing more to say (quit, a client
// that hung up).
type clientError struct {
	msg   string
	fatal bool
}

func (e *clientError) Error() string { return e.msg }

func refused(msg string) error { return &clientError{msg: msg} }

var errClose = errors.New("the connection ends")

type storeError struct {
	op  string
	err error
}

func (e *storeError) Error() string { return e.op + ": " + e.err.Error() }
func (e *storeError) Unwrap() error { return e.err }

// answer writes a handler's failure (nil: none) and says whether the
// connection reads on.
func (c *conn) answer(err error) bool {
	var client *clientError
	var store *storeError
	switch {
	case err == nil:
		return true
	case errors.As(err, &client):
		c.fail(tcpserver.ClientError, client.msg)
		return !client.fatal
	case errors.As(err, &store):
		return c.storeFailure(store)
	}
	return false
}

// storeFailure answers a store call's failure (kestrel/answer: every kind
// "-<message>"; only an internal failure closes), with the cause in the log
// when it is the server's. It says whether the connection reads on.
func (c *conn) storeFailure(e *storeError) bool {
	a := answer.Of(e.err)
	if a.Outcome() == tcpserver.ServerError {
		c.s.log.Warn("kestrel text: "+e.op+" failed", "err", e.err, "closes", a.Closes())
	}
	c.fail(a.Outcome(), a.Message)
	return !a.Closes()
}
