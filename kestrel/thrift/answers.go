package thrift

import (
	"strings"

	"github.com/gmq/gmq/internal/tcpserver"
	"github.com/gmq/gmq/job"
)

// An answer is the Thrift port's reply to a kind of error. Every failure
// reaches the client as a TApplicationException (INTERNAL_ERROR, the
// processor's "Internal error processing <method>: " and then the
// message), as kestrel's Finagle server answers every exception its
// handler throws (an AvailabilityException for a refusing status, a
// queue's refusal); the message starts with the kind's name, so a client
// can tell what to retry. closes says the connection closes after it.
type answer struct {
	text   string // "": the error's own message
	closes bool
}

// answerOf is the Thrift port's answers table: the reply to each kind of
// error (job.Kind) a call's store call ends in. Every kind the client can
// act on (its mistake, the job's or queue's state, Redis down or full, a
// status that refuses, too many waiting consumers) is answered on a
// connection that reads on. Only KindInternal, a failure gmq cannot name,
// closes the connection after its answer, so the client starts again from
// a known state. Redis at maxmemory is told as job.OutOfMemoryReason, not
// Redis's raw reply, which names script hashes. A put's item that finds no
// room is not a failure but the end of the put (noRoom).
var answerOf = map[job.Kind]answer{
	job.KindNotFound:    {},
	job.KindConflict:    {},
	job.KindInvalid:     {},
	job.KindTooBig:      {},
	job.KindFull:        {},
	job.KindOutOfMemory: {text: job.OutOfMemoryReason},
	job.KindRetryLater:  {},
	job.KindDraining:    {},
	job.KindOverloaded:  {},
	job.KindCancelled:   {},
	job.KindInternal:    {closes: true},
}

// noRoom are the kinds of a put's item that found no room for it (over the
// item limit, its queue full, Redis at maxmemory): the put ends there and
// answers how many it put before, as kestrel's put does.
var noRoom = map[job.Kind]bool{job.KindTooBig: true, job.KindFull: true, job.KindOutOfMemory: true}

// wireError is a failure as the client is told it: its kind's name, then
// its message.
type wireError struct {
	kind job.Kind
	msg  string
}

func (e *wireError) Error() string { return e.kind.String() + ": " + e.msg }

// failure is what a call that failed with err returns to the processor,
// which answers it as a TApplicationException: err's kind and message by
// answerOf. It counts the call's outcome, logs the cause when the failure
// is the server's, and closes the connection after the answer where
// answerOf says so.
func (c *conn) failure(err error) error {
	kind := job.KindOf(err)
	a := answerOf[kind]
	c.outcome = tcpserver.ClientError
	if !kind.Client() {
		c.outcome = tcpserver.ServerError
		c.s.log.Warn("kestrel thrift: "+c.op+" failed", "err", err, "closes", a.closes)
	}
	c.closeAfter = c.closeAfter || a.closes
	msg := a.text
	if msg == "" {
		msg = oneLine(err.Error())
	}
	return &wireError{kind: kind, msg: msg}
}

// oneLine keeps an error's message on one line.
func oneLine(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "\r", " "), "\n", " ") }
