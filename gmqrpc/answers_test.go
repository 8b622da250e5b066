package gmqrpc

import (
	"testing"

	"github.com/gmq/gmq/internal/tcpserver"
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
