package thrift

import (
	"github.com/gmq/gmq/internal/tcpserver"
	"github.com/gmq/gmq/job"
	"github.com/gmq/gmq/kestrel/answer"
)

// wireError is a failure as the client is told it: its kind's name, then
// its message.
type wireError struct {
	kind job.Kind
	msg  string
}

func (e *wireError) Error() string { return e.kind.String() + ": " + e.msg }

// failure is what a call that failed with err returns to the processor,
// which answers it as a TApplicationException (INTERNAL_ERROR, the
// processor's "Internal error processing <method>: " and then the message),
// as kestrel's Finagle server answers every exception its handler throws;
// the message starts with the kind's name, so a client can tell what to
// retry (kestrel/answer). It counts the call's outcome, logs the cause when
// the failure is the server's, and closes the connection after the answer
// where the answer says so.
func (c *conn) failure(err error) error {
	a := answer.Of(err)
	c.Outcome = a.Outcome()
	if a.Outcome() == tcpserver.ServerError {
		c.s.log.Warn("kestrel thrift: "+c.op+" failed", "err", err, "closes", a.Closes())
	}
	c.closeAfter = c.closeAfter || a.Closes()
	return &wireError{kind: a.Kind, msg: a.Message}
}
