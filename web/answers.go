package web

import (
	"errors"
	"net/http"

	"github.com/gmq/gmq/job"
)

// statusOfKind is the HTTP API's answers table: the status each kind of
// error answers (job.Kind), whatever the route. A 503 also says
// Retry-After (failure).
var statusOfKind = map[job.Kind]int{
	job.KindNotFound:    http.StatusNotFound,
	job.KindConflict:    http.StatusConflict,
	job.KindInvalid:     http.StatusBadRequest,
	job.KindTooBig:      http.StatusRequestEntityTooLarge,
	job.KindFull:        http.StatusInsufficientStorage,
	job.KindOutOfMemory: http.StatusServiceUnavailable,
	job.KindRetryLater:  http.StatusServiceUnavailable,
	job.KindDraining:    http.StatusServiceUnavailable,
	job.KindOverloaded:  http.StatusTooManyRequests,
	job.KindCancelled:   http.StatusGone, // the job was cancelled while held: stop its work
	job.KindInternal:    http.StatusInternalServerError,
}

// statusOf is the status err answers: its kind's, but for the two errors of
// HTTP's own framing (framingError: a body over the request's limit, 413,
// and one that did not arrive in time, 408).
func statusOf(err error) int {
	var framing *framingError
	if errors.As(err, &framing) {
		return framing.status
	}
	return statusOfKind[job.KindOf(err)]
}
