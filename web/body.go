package web

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/gin-gonic/gin"

	"github.com/gmq/gmq/internal/budget"
)

// body reads a request body of at most limit bytes within the body budget
// ([server] body_memory, shared with the TCP ports: package budget),
// reserving each step as its bytes arrive: a declared length reserves
// nothing it has not sent, so connections that announce large bodies and
// send none hold no budget. The budget bounds bodies while they arrive,
// which is where slow or unfinished uploads pile up; it is given back once
// the body is in (the request then runs at Redis's pace, bounded by
// request_timeout). A body over the limit (declared, or found while
// reading) is refused with 413 once the rest of it is drained (drainTooLarge).
// A body that breaks off or is malformed (bad chunked encoding) is the
// client's mistake: 400, or 408 when it does not arrive within read_timeout.
func (s *Server) body(c *gin.Context, limit int64) ([]byte, error) {
	limit = min(limit, int64(s.opts.MaxRequestBody))
	if c.Request.ContentLength > limit {
		s.drainTooLarge(c.Request, 0)
		return nil, &framingError{status: http.StatusRequestEntityTooLarge, err: &http.MaxBytesError{Limit: limit}}
	}
	r := http.MaxBytesReader(c.Writer, c.Request.Body, limit)
	hold := budget.Hold{Budget: s.budget, Ctx: c}
	defer hold.Release()
	var buf bytes.Buffer
	if size := c.Request.ContentLength; size > 0 {
		buf.Grow(int(min(size, budget.Unit))) // most bodies are one step: one allocation
	}
	for {
		if err := hold.Cover(buf.Len() + budget.Unit); err != nil {
			return nil, err
		}
		if _, err := io.CopyN(&buf, r, budget.Unit); err == io.EOF {
			return buf.Bytes(), nil
		} else if err != nil {
			err = bodyError(err)
			if statusOf(err) == http.StatusRequestEntityTooLarge {
				s.drainTooLarge(c.Request, int64(buf.Len()))
			}
			return nil, err
		}
	}
}

// maxDrain bounds how much of a body over the limit is read and thrown away
// before the 413 is answered.
const maxDrain = 64 << 20

// drainTooLarge reads and discards the rest of a body over the limit (read
// bytes of it are in already), up to maxDrain in all, so that the 413 can
// be read. Clients such as Python's urllib send the whole body before they
// read an answer: a server that answers and closes while unread bytes are
// in flight makes its kernel reset the connection, and the reset destroys
// the answer on its way (net/http's own 500 ms wait after a half-close does
// not read, so it does not help). nginx lingers for the same reason
// (lingering_close). The bytes cost no memory (io.Discard) and no budget;
// read_timeout still ends a body that trickles. A client that waits for
// "100 Continue" before sending is answered at once instead: it has sent
// nothing, and reading would ask for the body. A longer body than maxDrain
// is not read (a client sending one gets the 413 only if it reads while it
// sends, as curl does).
func (s *Server) drainTooLarge(r *http.Request, read int64) {
	if (r.Header.Get("Expect") != "" && read == 0) || r.ContentLength > maxDrain {
		return
	}
	if _, err := io.CopyN(io.Discard, r.Body, maxDrain-read); err != nil && err != io.EOF {
		// The drain ends there (the client went away, read_timeout): the 413 stands.
		s.log.Debug("draining an oversized body", "path", r.URL.Path, "err", err)
	}
}

// errBodyTimeout: the body did not arrive within [server] read_timeout.
var errBodyTimeout = errors.New("the request body did not arrive in time ([server] read_timeout)")

// framingError is one of the two errors of HTTP's own framing, which no
// job.Kind names: a body over the request's limit (413) and one that did
// not arrive in time (408). statusOf answers its status.
type framingError struct {
	status int
	err    error
}

func (e *framingError) Error() string { return e.err.Error() }
func (e *framingError) Unwrap() error { return e.err }

// bodyError is what reading a body failed with, as the client is told it:
// a framingError, or the client's mistake (400).
func bodyError(err error) error {
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return &framingError{status: http.StatusRequestEntityTooLarge, err: err}
	case errors.Is(err, os.ErrDeadlineExceeded):
		return &framingError{status: http.StatusRequestTimeout, err: fmt.Errorf("%w: %w", errBodyTimeout, err)}
	}
	return fmt.Errorf("%w: reading the body: %w", errBadRequest, err)
}
