package gmqrpc

import (
	"bufio"
	"fmt"

	"github.com/gmq/gmq/internal/budget"
	"github.com/gmq/gmq/internal/tcpserver"
)

// readValue reads the next JSON object from r, after any whitespace, and
// returns its bytes. JSON-RPC clients do not all end a request with a
// newline, so a request ends where its object closes: readValue follows
// strings, escapes and nesting just far enough to find that byte, and leaves
// checking the JSON to the decoder. Its memory grows as the bytes arrive,
// up to limit (errTooLarge past it), reserved with hold as every TCP port's
// bodies are (tcpserver.GrowBody). deadline(true) is called when the request's first byte
// has come, deadline(false) once it is whole: waiting for a request to
// begin has no limit.
func readValue(r *bufio.Reader, limit int, hold *budget.Hold, deadline func(begun bool)) ([]byte, error) {
	for { // idle until a request begins
		b, err := r.ReadByte()
		if err != nil {
			return nil, err
		}
		if b == '{' {
			break
		}
		if !isSpace(b) {
			return nil, fmt.Errorf("%w: it begins with %q, not {", errNotRequest, b)
		}
	}
	deadline(true)
	buf := make([]byte, 1, 512)
	buf[0] = '{'
	var s scanner
	s.depth = 1
	for {
		chunk, err := r.Peek(max(r.Buffered(), 1))
		if len(chunk) == 0 {
			return nil, err
		}
		end, done := s.scan(chunk)
		if len(buf)+end > limit {
			return nil, errTooLarge
		}
		if buf, err = tcpserver.GrowBody(buf, len(buf)+end, limit, hold); err != nil {
			return nil, err
		}
		buf = append(buf, chunk[:end]...)
		if _, err := r.Discard(end); err != nil {
			return nil, err
		}
		if done {
			deadline(false)
			return buf, nil
		}
	}
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }

// scanner follows a JSON value's structure across chunks: how deep in
// objects and arrays it is, and whether in a string (and after its
// backslash).
type scanner struct {
	depth            int
	inString, escape bool
}

// scan reads chunk and returns how much of it belongs to the value: all of
// it, or up to and including the byte that closes the value (done).
func (s *scanner) scan(chunk []byte) (end int, done bool) {
	for i, b := range chunk {
		switch {
		case s.escape:
			s.escape = false
		case s.inString:
			switch b {
			case '\\':
				s.escape = true
			case '"':
				s.inString = false
			}
		case b == '"':
			s.inString = true
		case b == '{' || b == '[':
			s.depth++
		case b == '}' || b == ']':
			s.depth--
			if s.depth == 0 {
				return i + 1, true
			}
		}
	}
	return len(chunk), false
}
