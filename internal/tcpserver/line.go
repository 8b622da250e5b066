package tcpserver

import (
	"bufio"
	"bytes"
	"errors"
)

// ReadLine reads a command line up to its LF and strips the LF and a CR
// before it (memcache's and kestrel's servers take a bare LF too). A line
// over max bytes, its line end excluded, is ErrLineTooLong, found without
// holding more than max+2 of its bytes.
func ReadLine(r *bufio.Reader, max int) (string, error) {
	var line []byte
	for {
		chunk, more, err := ReadChunk(r)
		if len(line)+len(chunk) > max+2 {
			return "", ErrLineTooLong
		}
		if err != nil {
			return "", err
		}
		line = append(line, chunk...)
		if !more {
			break
		}
	}
	line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
	if len(line) > max {
		return "", ErrLineTooLong
	}
	return string(line), nil
}

// ReadChunk reads up to the next LF, as r.ReadSlice does, but a line
// longer than r's buffer is no error: more says the line goes on after
// chunk. err is the connection's failure; chunk is what came before it.
func ReadChunk(r *bufio.Reader) (chunk []byte, more bool, err error) {
	chunk, err = r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		return chunk, true, nil
	}
	return chunk, false, err
}

// ASCIILower lower-cases A-Z only, as a verb is ASCII: strings.ToLower
// would turn invalid UTF-8 into U+FFFD and lengthen the line (a fuzzer
// found it), or show U+FFFD in an "unknown command" answer.
func ASCIILower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
