package job

import "errors"

// Outcomes that some callers take as results, not failures, each decided
// here once so that no front end re-decides it from the errors it is given
// (Standing, in unique.go, is a push's). The dispatcher returns them as
// errors, as most callers must answer them (a 404, a 409); the callers to
// whom they are normal answers ask these.

// NotHeld says a settle of a delivery its caller held failed only because the
// delivery is no longer the caller's: the job was delivered again since
// (ErrStale), has ended (ErrNotFound), is no longer reserved (ErrNotReserved:
// its TTR ran out), or was cancelled and ended so by this very call
// (ErrCancelled). To a caller that only wants the delivery over (a
// give-back at a connection's end, an abort, kestrel thrift's confirm or a
// keeper's touch) nothing is left to do.
func NotHeld(err error) bool {
	return Superseded(err) || errors.Is(err, ErrNotReserved) || errors.Is(err, ErrCancelled)
}

// Superseded is the narrower NotHeld of an ack that kestrel's memcache and
// text protocols make of an open read: the delivery went to another reader
// (ErrStale) or the job ended (ErrNotFound), so the ack has nothing to do.
// A read no longer reserved, or cancelled, stays a failure there: the
// client is told (kestrel/openreads).
func Superseded(err error) bool {
	return errors.Is(err, ErrStale) || errors.Is(err, ErrNotFound)
}

// Acked says err is the failure of what followed an ack that went through
// (an AckedError: the pop of an ack-and-pop): the ack must not be retried,
// nor its delivery kept as the caller's.
func Acked(err error) bool {
	var acked *AckedError
	return errors.As(err, &acked)
}

// Found is a topic call's outcome (a topic's stats, a flush, a delete) for
// a protocol where a topic the store does not know is an empty one, as a
// kestrel queue comes to be when it is named: ErrNotFound is (zero, false,
// nil). Any other failure is returned as it is.
func Found[T any](v T, err error) (T, bool, error) {
	if errors.Is(err, ErrNotFound) {
		var zero T
		return zero, false, nil
	}
	return v, err == nil, err
}

// Message is what a client is told of err, on every front end: its own
// message, but for Redis at maxmemory OutOfMemoryReason (Redis's raw reply
// names script hashes and lines; the log keeps it).
func Message(err error) string {
	if errors.Is(err, ErrOutOfMemory) {
		return OutOfMemoryReason
	}
	return err.Error()
}
