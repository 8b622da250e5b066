package gmqrpc

import (
	"fmt"
	"testing"

	"github.com/gmq/gmq/internal/jobjson"
	"github.com/gmq/gmq/internal/tcpserver"
	"github.com/gmq/gmq/job"
)

// TestOutcomeOf: a failed call's code label follows its error's kind.
func TestOutcomeOf(t *testing.T) {
	for text, want := range map[string]string{
		`not_found: ack "o_1": not found`:          tcpserver.ClientError,
		`invalid: bad request: field "delay"`:      tcpserver.ClientError,
		`full: push to "q": topic is full`:         tcpserver.ClientError,
		`retry_later: redis unavailable`:           tcpserver.ServerError,
		`draining: push: the server status is ...`: tcpserver.ServerError,
		`internal: boom`:                           tcpserver.ServerError,
		"rpc: can't find method Service.Nope":      tcpserver.ClientError,
	} {
		if got := outcomeOf(text); got != want {
			t.Errorf("outcomeOf(%q) = %s, want %s", text, got, want)
		}
	}
}

// TestCodedOnce: a message that starts with its kind's word already
// (job.ErrInvalid's "invalid: ...") is not coded twice.
func TestCodedOnce(t *testing.T) {
	for err, want := range map[error]string{
		fmt.Errorf("%w: topic name %q has a character outside A-Za-z0-9", job.ErrInvalid, "a~b"): `invalid: topic name "a~b" has a character outside A-Za-z0-9`,
		fmt.Errorf("ack %q: %w", "o_1", job.ErrNotFound):                                         `not_found: ack "o_1": not found`,
		jobjson.ErrBadRequest: "invalid: bad request",
		fmt.Errorf("push: %w (maxmemory): OOM command not allowed when used memory > 'maxmemory'. script: a0897c49", job.ErrOutOfMemory): "out_of_memory: " + job.OutOfMemoryReason,
	} {
		if got := coded(err).Error(); got != want {
			t.Errorf("coded(%v) = %q, want %q", err, got, want)
		}
	}
}
