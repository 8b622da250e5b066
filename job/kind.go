package job

import (
	"context"
	"errors"
)

// Kind is what an error means to a client, whatever its protocol: each
// front end answers a kind (with the verb it was asked) through one table
// of its own (web answers.go, beanstalk answers.go, kestrel answers.go,
// gmqrpc answers.go), and the conformance suite (conformance_test.go)
// asks every front end for each. A new sentinel gets its kind in kinds,
// below, and every front end answers it from then on.
type Kind uint8

// The kinds, from the client's side: what it did wrong, or when to retry.
const (
	// KindInternal: none of the others; the server's fault, logged with its
	// cause. The zero Kind, so an error no table names is one.
	KindInternal Kind = iota
	// KindNotFound: no such job (or topic).
	KindNotFound
	// KindConflict: the job or topic is not in a state that allows the
	// call (a duplicate id, a stale attempt, a job not reserved).
	KindConflict
	// KindInvalid: the request breaks a rule; sent again unchanged it is
	// refused again.
	KindInvalid
	// KindTooBig: a body over its limit, or a count past one that waiting
	// does not lower (ErrTooMany); sent again it is refused again.
	KindTooBig
	// KindFull: the topic holds as many jobs or bytes as it may; retry
	// when consumers have taken some.
	KindFull
	// KindOutOfMemory: Redis is at its maxmemory and refuses what would
	// grow it: the whole store is full. Pops and acks still work.
	KindOutOfMemory
	// KindRetryLater: the store cannot settle the call now (Redis down or
	// slow, a race to retry); the same call may succeed in a moment.
	KindRetryLater
	// KindDraining: the server status (ReadOnly, Quiescent) refuses it;
	// retry later or on another broker.
	KindDraining
	// KindOverloaded: the broker holds as many waiting consumers as it may.
	KindOverloaded
	// KindCancelled: the job was cancelled while its consumer held it: the
	// consumer should stop its work (the job has ended, cancelled).
	KindCancelled
)

var kindNames = [...]string{KindInternal: "internal", KindNotFound: "not_found", KindConflict: "conflict",
	KindInvalid: "invalid", KindTooBig: "too_big", KindFull: "full", KindOutOfMemory: "out_of_memory",
	KindRetryLater: "retry_later", KindDraining: "draining", KindOverloaded: "overloaded", KindCancelled: "cancelled"}

// String is the kind's name as gmqrpc's coded errors and the docs spell
// it: "not_found", "retry_later".
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "internal"
}

// Client says whether an error of kind k is the request's own outcome: a
// mistake of the client's, or what the job or topic is (not found, a
// conflict, too big, full). The others are the server's or the store's, to
// count as server errors and log with their cause.
func (k Kind) Client() bool {
	switch k {
	case KindNotFound, KindConflict, KindInvalid, KindTooBig, KindFull, KindCancelled:
		return true
	}
	return false
}

// Kinds lists every kind, in order.
func Kinds() []Kind {
	out := make([]Kind, len(kindNames))
	for k := range out {
		out[k] = Kind(k)
	}
	return out
}

// kinds is the one table of the sentinels' kinds, tried in order: the first
// that an error wraps decides (Redis at maxmemory before Redis unavailable,
// which its error may also wrap).
var kinds = []struct {
	err  error
	kind Kind
}{
	{ErrCancelled, KindCancelled},
	{ErrNotFound, KindNotFound},
	{ErrDuplicate, KindConflict},
	{ErrStale, KindConflict},
	{ErrNotReserved, KindConflict},
	{ErrConflict, KindConflict},
	{ErrOtherJob, KindConflict},
	{ErrStatusPending, KindConflict},
	{ErrInvalid, KindInvalid},
	{ErrTooBig, KindTooBig},
	{ErrFull, KindFull},
	{ErrOutOfMemory, KindOutOfMemory},
	{ErrRefused, KindDraining},
	{ErrTooManyWaiting, KindOverloaded},
	{ErrUnavailable, KindRetryLater},
	{ErrBusy, KindRetryLater},
	{context.DeadlineExceeded, KindRetryLater},
}

// KindOf is err's kind: the kind of the first sentinel of kinds it wraps,
// KindInternal when it wraps none (or is nil).
func KindOf(err error) Kind {
	if err == nil {
		return KindInternal
	}
	for _, k := range kinds {
		if errors.Is(err, k.err) {
			return k.kind
		}
	}
	return KindInternal
}
