package gmqrpc

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gmq/gmq/internal/tcpserver"
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
	kind := job.KindOf(err).String()
	if msg := job.Message(err); msg != err.Error() {
		return fmt.Errorf("%s: %s", kind, msg) // not Redis's raw reply, which names script hashes
	}
	if strings.HasPrefix(err.Error(), kind+":") {
		return err // its message starts with its kind's word already ("invalid: topic name ...")
	}
	return fmt.Errorf("%s: %w", kind, err)
}

// outcomeOf is a failed call's code label (tcpserver's outcomes), from the
// kind its error's text starts with (coded): net/rpc hands the codec the
// text only. The client's mistakes and the outcomes it must handle are
// client errors; the rest, the broker's or the store's, server errors.
func outcomeOf(text string) string {
	name, _, _ := strings.Cut(text, ":")
	for _, k := range job.Kinds() {
		if k.String() != name {
			continue
		}
		if k.Client() {
			return tcpserver.ClientError
		}
		return tcpserver.ServerError
	}
	return tcpserver.ClientError // uncoded: net/rpc's own (an unknown method, params it cannot read)
}
