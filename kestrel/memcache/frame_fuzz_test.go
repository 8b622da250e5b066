package memcache

import (
	"bufio"
	"strings"
	"testing"

	"github.com/gmq/gmq/internal/budget"
	"github.com/gmq/gmq/kestrel/internal/kestreltest"
)

// The framer and the get-option parser never panic, never accept a line
// over maxLine, and read exactly a set's byte count.
func FuzzReadRequest(f *testing.F) {
	kestreltest.FuzzRequests(f, []string{
		"set q 0 0 5\r\nhello\r\n", "get q/t=500/open\r\n", "get q/close/open\r\n", "get q/peek/abort\r\n",
		"set q 0 0 -1\r\n", "set q 0 0 3\r\nabcde", "SET q 0 0 1\nx\n", "\r\n", "get\r\n", "gets a/b/c\r\n",
		strings.Repeat("g", 1100) + "\r\n", "set q 0 0 99\r\nshort\r\n", "cas q 0 0 1 7\r\nx\r\n", "get q/t=-1\r\n",
	}, func(r *bufio.Reader, hold *budget.Hold) (request, error) { return readRequest(r, 64, 1024, hold) }, checkFramed)
}

// checkFramed asserts what the framer made of a request: a refusal in
// memcache's words, or a line within maxLine, a set's data within the
// 64-byte item limit and get options that make sense; it says whether the
// connection reads on.
func checkFramed(t *testing.T, req request) bool {
	if req.reply != "" {
		if req.reply != "NOT_STORED" && !strings.HasPrefix(req.reply, "CLIENT_ERROR ") {
			t.Fatalf("reply %q", req.reply)
		}
		return !req.closeAfter
	}
	if line := strings.Join(append([]string{req.verb}, req.args...), " "); len(line) > maxLine {
		t.Fatalf("accepted a %d-byte line", len(line))
	}
	if storageVerbs[req.verb] && len(req.data) > 64 {
		t.Fatalf("accepted %d bytes of data over the 64-byte item limit", len(req.data))
	}
	if (req.verb == "get" || req.verb == "gets") && len(req.args) > 0 {
		if o, err := parseGet(req.args[0]); err == nil && (o.queue == "" || (o.peek && (o.open || o.close || o.abort))) {
			t.Fatalf("parseGet(%q) accepted %+v", req.args[0], o)
		}
	}
	return true
}
