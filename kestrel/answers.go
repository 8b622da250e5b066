package kestrel

import "github.com/gmq/gmq/job"

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
	serverError = answer{word: "SERVER_ERROR", message: true, closes: true}
	clientError = answer{word: "CLIENT_ERROR", message: true}
	notStored   = answer{word: "NOT_STORED"}
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
	job.KindInvalid:     clientError,
	job.KindTooBig:      serverError,
	job.KindFull:        serverError,
	job.KindOutOfMemory: serverError,
	job.KindRetryLater:  serverError,
	job.KindDraining:    serverError,
	job.KindOverloaded:  serverError,
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
