package beanstalk

import (
	"bufio"
	"bytes"
	"io"

	"github.com/gmq/gmq/internal/budget"
	"github.com/gmq/gmq/internal/tcpserver"
)

// maxLine is beanstalkd's command line buffer: a line, CRLF included, may be
// at most this long; a longer one is discarded up to its CRLF and answered
// BAD_FORMAT.
const maxLine = 224

// request is one framed request: a command line, and for put its body.
type request struct {
	line    string
	tooLong bool // the line was over maxLine: answer BAD_FORMAT
	cmd     command
	reply   string // a parse or framing error to answer instead of running cmd
	body    []byte // put: the body without its CRLF
}

// readLine reads up to the next CRLF (a bare LF does not end a line). It keeps
// at most maxLine bytes of a longer line.
func readLine(r *bufio.Reader) (line []byte, tooLong bool, err error) {
	var buf []byte
	var last byte
	total := 0
	for {
		chunk, more, err := tcpserver.ReadChunk(r)
		if err != nil {
			return nil, false, err
		}
		total += len(chunk)
		if total <= maxLine {
			buf = append(buf, chunk...)
		}
		ended := !more && ((len(chunk) >= 2 && chunk[len(chunk)-2] == '\r') || (len(chunk) == 1 && last == '\r'))
		if len(chunk) > 0 {
			last = chunk[len(chunk)-1]
		}
		if ended {
			if total > maxLine {
				return nil, true, nil
			}
			return buf[:len(buf)-2], false, nil
		}
	}
}

// readRequest frames the next request: the line, and for a put with a good
// command line its body (or, for one over maxJobSize, skips the body). The
// body's memory is reserved with hold: when the budget stays short, the body
// is skipped and answered OUT_OF_MEMORY, beanstalkd's "try again later".
func readRequest(r *bufio.Reader, maxJobSize int, hold *budget.Hold) (request, error) {
	line, tooLong, err := readLine(r)
	if err != nil {
		return request{}, err
	}
	if tooLong {
		return request{tooLong: true, reply: msgBadFormat}, nil
	}
	req := request{line: string(line)}
	req.cmd, req.reply = parse(req.line)
	if req.reply != "" || req.cmd.op != opPut {
		return req, nil
	}
	size := int64(req.cmd.bytes) + 2
	if int64(req.cmd.bytes) > int64(maxJobSize) {
		if _, err := io.CopyN(io.Discard, r, size); err != nil {
			return request{}, err
		}
		req.reply = msgJobTooBig
		return req, nil
	}
	if req.cmd.tube != "" { // trailing text after the size: the body is read as commands
		req.reply = msgBadFormat
		return req, nil
	}
	body, err := tcpserver.ReadBody(r, int(size), hold)
	if tcpserver.FaultOf(err) == tcpserver.FaultBusy { // the body was read and dropped
		req.reply = msgOutOfMemory
		return req, nil
	}
	if err != nil {
		return request{}, err
	}
	if !bytes.HasSuffix(body, []byte("\r\n")) {
		req.reply = msgExpectedCRLF
		return req, nil
	}
	req.body = body[:len(body)-2]
	return req, nil
}
