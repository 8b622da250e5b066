package text

import (
	"github.com/gmq/gmq/internal/tcpserver"
	"github.com/gmq/gmq/kestrel/answer"
)

// A handler's failure, which handle answers (conn.answer), is a
// tcpserver.ClientErr, the request refused with kestrel's message (its
// "Queue name required."), after which the connection reads on unless it
// closes; or a tcpserver.StoreErr, a store call's failure, answered by its
// kind (storeFailure); or tcpserver.ErrClose, which ends the connection
// with nothing more to say (quit, a client that hung up).

func refused(msg string) error { return &tcpserver.ClientErr{Line: msg} }

// answer writes a handler's failure (nil: none) and says whether the
// connection reads on.
func (c *conn) answer(err error) bool {
	return tcpserver.Answers{Client: func(e *tcpserver.ClientErr) { c.fail(tcpserver.ClientError, e.Line) }, Store: c.storeFailure}.Answer(err)
}

// storeFailure answers a store call's failure (kestrel/answer: every kind
// "-<message>"; only an internal failure closes), with the cause in the log
// when it is the server's. It says whether the connection reads on.
func (c *conn) storeFailure(e *tcpserver.StoreErr) bool {
	a := answer.Of(e.Err)
	if a.Outcome() == tcpserver.ServerError {
		c.s.log.Warn("kestrel text: "+e.Op+" failed", "err", e.Err, "closes", a.Closes())
	}
	c.fail(a.Outcome(), a.Message)
	return !a.Closes()
}
