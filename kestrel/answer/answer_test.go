package answer

import (
	"errors"
	"fmt"
	"testing"

	"github.com/gmq/gmq/internal/tcpserver"
	"github.com/gmq/gmq/job"
)

// Each kind of failure is told with its own message on one line, Redis at
// maxmemory in gmq's words; only a failure gmq cannot name closes the
// connection; the server's failures count as the server's.
func TestOf(t *testing.T) {
	for _, tc := range []struct {
		err     error
		kind    job.Kind
		message string
		closes  bool
		outcome string
	}{
		{fmt.Errorf("ack 7: %w", job.ErrNotFound), job.KindNotFound, "ack 7: not found", false, tcpserver.ClientError},
		{fmt.Errorf("put: %w", job.ErrFull), job.KindFull, "put: topic is full", false, tcpserver.ClientError},
		{fmt.Errorf("put: %w: OOM command not allowed (script f_1234)", job.ErrOutOfMemory), job.KindOutOfMemory, job.OutOfMemoryReason, false, tcpserver.ServerError},
		{fmt.Errorf("get: %w", job.ErrUnavailable), job.KindRetryLater, "get: redis unavailable", false, tcpserver.ServerError},
		{errors.New("two\r\nlines"), job.KindInternal, "two  lines", true, tcpserver.ServerError},
	} {
		got := Of(tc.err)
		if got.Kind != tc.kind || got.Message != tc.message || got.Closes() != tc.closes || got.Outcome() != tc.outcome {
			t.Errorf("Of(%q) = %+v (closes %v, %s), want %v %q (closes %v, %s)", tc.err, got, got.Closes(), got.Outcome(),
				tc.kind, tc.message, tc.closes, tc.outcome)
		}
	}
}

// A put's item over its limit, into a full queue or a full Redis found no
// room; any other failure is the put's own.
func TestNoRoom(t *testing.T) {
	for err, want := range map[error]bool{
		job.ErrTooBig: true, fmt.Errorf("item 2: %w", job.ErrFull): true, job.ErrOutOfMemory: true,
		job.ErrNotFound: false, job.ErrUnavailable: false, errors.New("boom"): false,
	} {
		if got := NoRoom(err); got != want {
			t.Errorf("NoRoom(%v) = %v, want %v", err, got, want)
		}
	}
}
