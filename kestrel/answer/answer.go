// Package answer is how kestrel's text and thrift protocols tell a client
// that a store call failed: both answer every kind of failure alike (the
// text port as "-<message>", the thrift port as a TApplicationException
// "<kind>: <message>"), where memcache's protocol has a word per command
// (kestrel/memcache answers.go). Kestrel answers every failure a client can
// act on (its mistake, the job's or queue's state, Redis down or full, a
// status that refuses, too many waiting consumers) on a connection that
// reads on, and so does gmq; only a failure gmq cannot name
// (job.KindInternal) closes the connection after its answer, so that the
// client starts again from a known state, its open reads back in their
// queues.
package answer

import (
	"strings"

	"github.com/gmq/gmq/internal/tcpserver"
	"github.com/gmq/gmq/job"
)

// Failure is what a client is told of a store call's failure.
type Failure struct {
	Kind job.Kind
	// Message is one line: the error's own message, or for Redis at
	// maxmemory job.OutOfMemoryReason (Redis's own reply names script
	// hashes).
	Message string
}

// Of is the answer to err, a store call's failure.
func Of(err error) Failure {
	return Failure{Kind: job.KindOf(err), Message: oneLine(job.Message(err))}
}

// Closes says the connection closes after the answer: only for a failure
// gmq cannot name.
func (f Failure) Closes() bool { return f.Kind == job.KindInternal }

// Outcome is the request's outcome for the metrics: tcpserver.ClientError,
// or tcpserver.ServerError when the failure is the server's (the front end
// logs its cause then).
func (f Failure) Outcome() string {
	if f.Kind.Client() {
		return tcpserver.ClientError
	}
	return tcpserver.ServerError
}

// NoRoom says whether a put's item failed for want of room for it (over the
// item limit, its queue full, Redis at maxmemory): such an item is not
// counted, as kestrel's put counts only what its queue took, and the put
// goes on (text) or ends there with the count so far (thrift). Any other
// failure is the put's.
func NoRoom(err error) bool {
	switch job.KindOf(err) {
	case job.KindTooBig, job.KindFull, job.KindOutOfMemory:
		return true
	}
	return false
}

// oneLine keeps a message on the answer's one line.
func oneLine(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "\r", " "), "\n", " ") }
