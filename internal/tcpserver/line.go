package tcpserver

import (
	"bufio"
	"bytes"
	"errors"
)

// ErrLineTooLong: a command line over the limit ReadLine was given.
var ErrLineTooLong = errors.New("line too long")

// ReadLine reads a command line up to its LF and strips the LF and a CR
// before it (memcache's and kestrel's servers take a bare LF too). A line
// over max bytes, its line end excluded, is ErrLineTooLong, found without
// holding more than max+2 of its bytes.
func ReadLine(r *bufio.Reader, max int) (string, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > max+2 {
			return "", ErrLineTooLong
		}
		line = append(line, chunk...)
		if err == nil {
			break
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return "", err
		}
	}
	line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
	if len(line) > max {
		return "", ErrLineTooLong
	}
	return string(line), nil
}
