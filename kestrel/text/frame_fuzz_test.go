package text

import (
	"bufio"
	"bytes"
	"strings"
	"testing"

	"github.com/gmq/gmq/internal/budget"
)

// The text protocol's framer on any bytes: it never panics, never accepts
// a command line over maxLine, an item over the item limit, more than
// maxItems items or a put past the request limit, and an item never holds
// a line feed.
func FuzzReadRequest(f *testing.F) {
	for _, s := range []string{
		"put q:\none\ntwo\n\n", "put q 5000:\nx\r\n\n", "get q\n", "get q 100\n", "peek q\n", "monitor q 10\n",
		"confirm q 2\n", "PUT q:\nx\n", "put q\nx\n\n", "\n", strings.Repeat("g", 1100) + "\n",
		"put q:\n" + strings.Repeat("y", 100) + "\n\n", "status readonly this\n", "put q:\n\r\n",
	} {
		f.Add([]byte(s))
	}
	const maxItem, maxRequest = 64, 1024
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bufio.NewReader(bytes.NewReader(data))
		for range 50 {
			req, err := readRequest(r, limits{maxItem: maxItem, maxRequest: maxRequest}, &budget.Hold{})
			if err != nil {
				return
			}
			if req.reply != "" {
				if !strings.HasPrefix(req.reply, "-") {
					t.Fatalf("reply %q", req.reply)
				}
				if req.closeAfter {
					return
				}
				continue
			}
			if line := strings.Join(append([]string{req.verb}, req.args...), " "); len(line) > maxLine {
				t.Fatalf("accepted a %d-byte line", len(line))
			}
			if len(req.items) > maxItems {
				t.Fatalf("kept %d items", len(req.items))
			}
			total := 0
			for _, item := range req.items {
				if len(item) > maxItem || strings.Contains(item, "\n") {
					t.Fatalf("kept item %q", item)
				}
				total += len(item)
			}
			if total > maxRequest {
				t.Fatalf("kept %d bytes of items over the %d-byte request limit", total, maxRequest)
			}
		}
	})
}
