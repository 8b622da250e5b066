package memcache

import (
	"github.com/gmq/gmq/internal/tcpserver"
	"github.com/gmq/gmq/job"
	failure "github.com/gmq/gmq/kestrel/answer"
)

// An answer is the memcache port's reply to a kind of error: the reply's
// first word, whether the error's message follows it, and whether the
// connection closes after it (as kestrel closes one it cannot serve, so
// that its clients retry elsewhere).
type answer struct {
	word    string
	message bool
	closes  bool
}

var (
	serverError       = answer{word: "SERVER_ERROR", message: true, closes: true}
	clientErrorAnswer = answer{word: "CLIENT_ERROR", message: true}
	notStored         = answer{word: "NOT_STORED"}
)

// answerOf is the memcache port's answers table: the reply to each kind of
// error (job.Kind) a command's store call ends in, for any command but
// those answers overrides. The store's refusals of the request itself
// (job.KindInvalid: a limit, a bad value) are the client's, and the
// connection reads on; everything else is kestrel's SERVER_ERROR, which
// its clients retry, on a closed connection.
var answerOf = map[job.Kind]answer{
	job.KindNotFound:    serverError,
	job.KindConflict:    serverError,
	job.KindInvalid:     clientErrorAnswer,
	job.KindTooBig:      serverError,
	job.KindFull:        serverError,
	job.KindOutOfMemory: serverError,
	job.KindRetryLater:  serverError,
	job.KindDraining:    serverError,
	job.KindOverloaded:  serverError,
	job.KindCancelled:   serverError, // a read's item cancelled meanwhile: ended, as a confirm of a gone item
	job.KindInternal:    serverError,
}

// answers holds the commands whose answer to a kind is not answerOf's.
var answers = map[string]map[job.Kind]answer{
	// A set with no room for its item (over max_item_size, a full queue,
	// Redis at maxmemory) is not stored, kestrel's answer to a full queue,
	// and the connection reads on.
	"set": {job.KindTooBig: notStored, job.KindFull: notStored, job.KindOutOfMemory: notStored},
}

// answerTo is command op's answer to err.
func answerTo(op string, err error) answer {
	kind := job.KindOf(err)
	if a, ok := answers[op][kind]; ok {
		return a
	}
	return answerOf[kind]
}

// A handler's failure, which handle answers (answer), is a
// tcpserver.ClientErr: the request refused, its line ("CLIENT_ERROR ...",
// or kestrel's bare "ERROR"), after which the connection closes if it is
// fatal, as kestrel closes one whose request it cannot make sense of; or a
// tcpserver.StoreErr, a store call's failure, answered by the answers
// table (answerTo) by the command; or tcpserver.ErrClose, which ends the
// connection with nothing more to say (quit, a shutdown, a client that
// hung up).

// refused is a CLIENT_ERROR after which the connection reads on; fatal one
// after which it closes.
func refused(msg string) error { return &tcpserver.ClientErr{Line: "CLIENT_ERROR " + msg} }
func fatal(msg string) error   { return &tcpserver.ClientErr{Line: "CLIENT_ERROR " + msg, Close: true} }

var (
	errError      = &tcpserver.ClientErr{Line: "ERROR"}              // kestrel's word for a command it will not run
	errFatalError = &tcpserver.ClientErr{Line: "ERROR", Close: true} // the same, and the connection closes
)

// answer writes a handler's failure (nil: none) and says whether the
// connection reads on.
func (c *conn) answer(err error) bool {
	return tcpserver.Answers{Client: func(e *tcpserver.ClientErr) { c.line(e.Line) }, Store: c.storeFailure}.Answer(err)
}

// storeFailure answers command op's store call's failure by the answers
// table (answers.go), with the cause in the log when it closes the
// connection. It says whether the connection reads on.
func (c *conn) storeFailure(e *tcpserver.StoreErr) bool {
	op, err, noreply := e.Op, e.Err, e.NoReply
	a := answerTo(op, err)
	if a.closes {
		c.s.log.Warn("kestrel: "+op+" failed", "err", err)
	}
	switch {
	case a.message:
		c.line(a.word + " " + failure.Of(err).Message) // one line; Redis's OOM reply kept to the log
	default:
		c.reply(a.word, noreply)
	}
	return !a.closes
}
