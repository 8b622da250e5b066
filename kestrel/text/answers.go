package text

import (
	"errors"
	"strings"

	"github.com/gmq/gmq/internal/tcpserver"
	"github.com/gmq/gmq/job"
)

// An answer is the text port's reply to a kind of error: always
// "-<message>", the error's own message unless text says another, and
// whether the connection closes after it.
type answer struct {
	text   string // "" : the error's message, on one line
	closes bool
}

// answerOf is the text port's answers table: the reply to each kind of
// error (job.Kind) a command's store call ends in. Kestrel's text protocol
// answers every failure with "-<message>" on a connection that reads on
// (its AvailabilityException, a refused status), and so does gmq, for
// every kind the client can act on: its mistake, the job's or queue's
// state, Redis down or full, a status that refuses, too many waiting
// consumers. The connection's open reads stay as they were (an ack that
// failed leaves its read open). Only KindInternal, a failure gmq cannot
// name, closes the connection: its open reads go back to their queues and
// the client starts again from a known state. Redis at maxmemory is told
// as job.OutOfMemoryReason, not Redis's raw reply, which names script
// hashes.
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
// body limit, its queue full, Redis at maxmemory): the item is not counted
// and the put goes on, as kestrel's put counts only what its queue took.
// Any other failure ends the put with its answer.
var noRoom = map[job.Kind]bool{job.KindTooBig: true, job.KindFull: true, job.KindOutOfMemory: true}

// A handler's failure, which handle answers (conn.answer). A clientError is
// the request refused, with kestrel's message (its "Queue name
// required."), after which the connection reads on unless fatal. A
// storeError is a store call's failure, answered by answerOf by its kind.
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

// storeFailure answers a store call's failure by answerOf, with the cause
// in the log when it is the server's. It says whether the connection reads
// on.
func (c *conn) storeFailure(e *storeError) bool {
	kind := job.KindOf(e.err)
	a := answerOf[kind]
	outcome := tcpserver.ClientError
	if !kind.Client() {
		outcome = tcpserver.ServerError
		c.s.log.Warn("kestrel text: "+e.op+" failed", "err", e.err, "closes", a.closes)
	}
	msg := a.text
	if msg == "" {
		msg = oneLine(e.err.Error())
	}
	c.fail(outcome, msg)
	return !a.closes
}

// oneLine keeps an error's message on the answer's line.
func oneLine(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "\r", " "), "\n", " ") }
