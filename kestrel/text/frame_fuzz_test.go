package text

import (
	"bufio"
	"strings"
	"testing"

	"github.com/gmq/gmq/internal/budget"
	"github.com/gmq/gmq/kestrel/internal/kestreltest"
)

// fuzzLimits bound what the fuzzed framer may keep.
var fuzzLimits = limits{maxItem: 64, maxRequest: 1024}

// The text protocol's framer on any bytes: it never panics, never accepts
// a command line over maxLine, an item over the item limit, more than
// maxItems items or a put past the request limit, and an item never holds
// a line feed.
func FuzzReadRequest(f *testing.F) {
	kestreltest.FuzzRequests(f, []string{
		"put q:\none\ntwo\n\n", "put q 5000:\nx\r\n\n", "get q\n", "get q 100\n", "peek q\n", "monitor q 10\n",
		"confirm q 2\n", "PUT q:\nx\n", "put q\nx\n\n", "\n", strings.Repeat("g", 1100) + "\n",
		"put q:\n" + strings.Repeat("y", 100) + "\n\n", "status readonly this\n", "put q:\n\r\n",
	}, func(r *bufio.Reader, hold *budget.Hold) (request, error) { return readRequest(r, fuzzLimits, hold) }, checkFramed)
}

// checkFramed asserts what the framer made of a request: a refusal in the
// protocol's words, or a line within maxLine and items within fuzzLimits;
// it says whether the connection reads on.
func checkFramed(t *testing.T, req request) bool {
	if req.reply != "" {
		if !strings.HasPrefix(req.reply, "-") {
			t.Fatalf("reply %q", req.reply)
		}
		return !req.closeAfter
	}
	if line := strings.Join(append([]string{req.verb}, req.args...), " "); len(line) > maxLine {
		t.Fatalf("accepted a %d-byte line", len(line))
	}
	if len(req.items) > maxItems {
		t.Fatalf("kept %d items", len(req.items))
	}
	total := 0
	for _, item := range req.items {
		if len(item) > fuzzLimits.maxItem || strings.Contains(item, "\n") {
			t.Fatalf("kept item %q", item)
		}
		total += len(item)
	}
	if total > fuzzLimits.maxRequest {
		t.Fatalf("kept %d bytes of items over the %d-byte request limit", total, fuzzLimits.maxRequest)
	}
	return true
}
