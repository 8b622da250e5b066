package gmqrpc

import (
	"errors"
	"fmt"

	"github.com/gmq/gmq/job"
)

// errEmpty is a Pop's answer when nothing was ready in time: "empty", as
// gmq's Pop answered, uncoded (it is not a failure).
var errEmpty = errors.New("empty")

// coded is a call's failure as the client reads it: the name of its kind
// (job.Kind: not_found, conflict, invalid, too_big, full, out_of_memory,
// retry_later, draining, overloaded, internal), a colon, and its message:
// `not_found: ack "o_1": not found`. JSON-RPC 1.0's error is a string to
// Go's net/rpc/jsonrpc client, so the code leads the string (as nsq's
// E_INVALID leads its errors) rather than making it an object.
func coded(err error) error {
	if err == nil || err == errEmpty {
		return err
	}
	return fmt.Errorf("%s: %w", job.KindOf(err), err)
}
