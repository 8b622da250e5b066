package tcpserver

import (
	"errors"

	"github.com/gmq/gmq/job"
)

// A Fault is why a request is refused as it is framed, before a handler
// sees it. The kit's readers (ReadLine, ReadBody, GrowBody) and a
// protocol's own frame reader return it as an error; FaultOf decides which
// it is once, and each protocol's frame reader answers each fault in its
// own words, reading on or closing the connection as they say.
type Fault uint8

const (
	// NoFault: the connection's failure (closed, timed out), or none:
	// nothing to answer.
	NoFault Fault = iota
	// FaultLineTooLong: a command line over its limit (ErrLineTooLong).
	FaultLineTooLong
	// FaultTooLarge: a request over the request limit (ErrTooLarge).
	FaultTooLarge
	// FaultBusy: the body memory budget stayed short (job.ErrBusy); the
	// body was read and dropped, so the next request is framed right and
	// the client may try again.
	FaultBusy
	// FaultMalformed: bytes that no request of the protocol begins with
	// (Malformed).
	FaultMalformed
)

var (
	// ErrLineTooLong: a command line over the limit ReadLine was given.
	ErrLineTooLong = errors.New("line too long")
	// ErrTooLarge: a request over the limit of what one may hold ([server]
	// max_request_body).
	ErrTooLarge = errors.New("request too large")
)

// malformed is a Malformed error.
type malformed struct{ msg string }

func (e *malformed) Error() string { return e.msg }

// Malformed is a FaultMalformed error that says msg: what the bytes are
// not.
func Malformed(msg string) error { return &malformed{msg: msg} }

// FaultOf is the fault err is, NoFault for any other error (or nil).
func FaultOf(err error) Fault {
	var bad *malformed
	switch {
	case err == nil:
		return NoFault
	case errors.Is(err, ErrLineTooLong):
		return FaultLineTooLong
	case errors.Is(err, ErrTooLarge):
		return FaultTooLarge
	case errors.Is(err, job.ErrBusy):
		return FaultBusy
	case errors.As(err, &bad):
		return FaultMalformed
	}
	return NoFault
}
