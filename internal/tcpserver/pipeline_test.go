package tcpserver

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// ReadBody reads exactly n bytes, however they come, into no more memory
// than n; a body cut short is an error.
func TestReadBody(t *testing.T) {
	for _, n := range []int{0, 1, 100, readBuffer, readBuffer + 1, 65535, 1 << 20} {
		body := strings.Repeat("x", n) + "NEXT"
		for name, r := range map[string]io.Reader{
			"whole":       strings.NewReader(body),
			"a byte each": iotest.OneByteReader(strings.NewReader(body)),
			"halves":      iotest.HalfReader(strings.NewReader(body)),
		} {
			if name == "a byte each" && n > 70000 {
				continue
			}
			got, err := ReadBody(r, n)
			if err != nil || len(got) != n || cap(got) > max(n, readBuffer) || !bytes.Equal(got, []byte(body[:n])) {
				t.Fatalf("%d bytes, %s: %d bytes (cap %d), %v", n, name, len(got), cap(got), err)
			}
		}
		if n > 0 {
			if _, err := ReadBody(strings.NewReader(body[:n-1]), n); err != io.ErrUnexpectedEOF {
				t.Errorf("%d bytes cut short: %v, want ErrUnexpectedEOF", n, err)
			}
		}
	}
}
