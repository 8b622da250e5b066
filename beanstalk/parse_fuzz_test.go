package beanstalk

import (
	"bufio"
	"bytes"
	"strings"
	"testing"

	"github.com/gmq/gmq/internal/budget"
)

// FuzzReadRequest frames arbitrary input as a connection would: it must never
// panic, never accept a line longer than beanstalkd's limit, and answer every
// request it cannot run with one of the protocol's error lines.
func FuzzReadRequest(f *testing.F) {
	for _, s := range []string{
		"put 1 0 1 1\r\nx\r\n", "reserve\r\n", "reserve-with-timeout -5\r\n", "delete 18446744073709551615\r\n",
		"use a b\r\n", "pause-tube t 9\r\n", "kick -1\r\n", "put 1 0 1 3\r\nabcde", "\r\n", "peek\n 1\r\n",
		strings.Repeat("z", 300) + "\r\n", "release 1 2 3\r\nbury 4 5\r\n", "stats-tube " + strings.Repeat("t", 200) + "\r\n",
	} {
		f.Add([]byte(s))
	}
	errorLines := map[string]bool{msgBadFormat: true, msgUnknownCommand: true, msgExpectedCRLF: true, msgJobTooBig: true}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bufio.NewReader(bytes.NewReader(data))
		for range 50 {
			req, err := readRequest(r, 1024, &budget.Hold{})
			if err != nil {
				return
			}
			if len(req.line)+2 > maxLine {
				t.Fatalf("accepted a %d-byte line", len(req.line)+2)
			}
			if req.reply != "" && !errorLines[req.reply] {
				t.Fatalf("reply %q for %q", req.reply, req.line)
			}
			if req.reply == "" && req.cmd.op == opPut && len(req.body) != int(req.cmd.bytes) {
				t.Fatalf("body of %d bytes for a put of %d", len(req.body), req.cmd.bytes)
			}
			if req.reply == "" && (req.cmd.op == opUse || req.cmd.op == opWatch) && !validTube(req.cmd.tube) {
				t.Fatalf("accepted tube %q", req.cmd.tube)
			}
		}
	})
}
