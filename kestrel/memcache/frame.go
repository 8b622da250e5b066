package memcache

import (
	"bufio"
	"bytes"
	"io"
	"strconv"
	"strings"

	"github.com/gmq/gmq/internal/budget"
	"github.com/gmq/gmq/internal/tcpserver"
)

// maxLine is the longest command line, its line end excluded: a queue name
// (at most 200 bytes), its options and a set's numbers fit many times over.
const maxLine = 1024

// request is one framed request: the command line split at spaces, the verb
// lower-cased (as kestrel's codec does), and for a storage command its data.
type request struct {
	verb string
	args []string
	data []byte // set: the item, its CRLF stripped
	// reply, when set, is answered instead of running the request (a framing
	// or parse error), and closeAfter closes the connection after it.
	reply      string
	closeAfter bool
	// noreply: the line ended with memcache's "noreply" (pymemcache sends it
	// by default on set and delete), so only an error is answered; reply is
	// then one (a NOT_STORED is not).
	noreply bool
}

// storageVerbs are memcache's commands that carry data after their line;
// of them kestrel (and gmq) runs only set, but each one's data is read, so
// that it is not taken for commands.
var storageVerbs = map[string]bool{"set": true, "add": true, "replace": true, "append": true, "prepend": true, "cas": true}

// readLine reads up to the next LF and strips the CRLF (or a bare LF, which
// memcache servers accept too).
func readLine(r *bufio.Reader) (string, error) { return tcpserver.ReadLine(r, maxLine) }

// readRequest frames the next request. Data over maxItem is read and
// dropped (the answer is NOT_STORED, kestrel's for a too-large item, and the
// connection stays usable); a data length over maxData is not read at all:
// the client is told and the connection closed. err is the connection's
// failure (closed, timed out); everything else the client sent is a request,
// maybe one to refuse (refusal). The data's memory is reserved with hold:
// when the budget stays short, the data is read and dropped and the answer
// is a SERVER_ERROR saying to try again (the connection stays usable).
func readRequest(r *bufio.Reader, maxItem, maxData int, hold *budget.Hold) (request, error) {
	req, err := frameRequest(r, maxItem, maxData, hold)
	if f := tcpserver.FaultOf(err); f != tcpserver.NoFault {
		return refusal(f, err), nil
	}
	return req, err
}

// refusal is the answer to a request refused as it was framed: a line too
// long closes the connection (what follows it cannot be framed); a body
// the budget had no room for was read and dropped, so the connection reads
// on.
func refusal(f tcpserver.Fault, err error) request {
	switch f {
	case tcpserver.FaultBusy:
		return request{reply: "SERVER_ERROR " + err.Error() + ": try again"}
	case tcpserver.FaultLineTooLong:
		return request{reply: "CLIENT_ERROR line too long (the limit is " + strconv.Itoa(maxLine) + " bytes)", closeAfter: true}
	}
	return request{reply: "CLIENT_ERROR " + err.Error(), closeAfter: true} // a fault its framing does not raise today
}

// frameRequest is readRequest but for the faults it refuses.
func frameRequest(r *bufio.Reader, maxItem, maxData int, hold *budget.Hold) (request, error) {
	line, err := readLine(r)
	if err != nil {
		return request{}, err
	}
	fields := strings.Split(line, " ")
	req := request{verb: tcpserver.ASCIILower(fields[0]), args: fields[1:], noreply: len(fields) > 2 && fields[len(fields)-1] == "noreply"}
	if !storageVerbs[req.verb] {
		return req, nil
	}
	if len(req.args) < 4 {
		return request{reply: "CLIENT_ERROR malformed request line: want " + req.verb + " <queue> <flags> <exptime> <bytes>", closeAfter: true}, nil
	}
	size, err := strconv.Atoi(req.args[3])
	switch {
	case err != nil || size < 0:
		return request{reply: "CLIENT_ERROR bad data chunk: the byte count " + strconv.Quote(req.args[3]) + " is not a whole number", closeAfter: true}, nil
	case size > maxData:
		return request{reply: "CLIENT_ERROR bad data chunk: " + strconv.Itoa(size) + " bytes is over the request limit of " +
			strconv.Itoa(maxData) + " ([server] max_request_body)", closeAfter: true}, nil
	case size > maxItem:
		if _, err := io.CopyN(io.Discard, r, int64(size)+2); err != nil {
			return request{}, err
		}
		return request{reply: "NOT_STORED", noreply: req.noreply}, nil
	}
	data, err := tcpserver.ReadBody(r, size+2, hold)
	if err != nil {
		return request{}, err
	}
	if !bytes.HasSuffix(data, []byte("\r\n")) {
		return request{reply: "CLIENT_ERROR bad data chunk: the data is not followed by CRLF (is the byte count right?)", closeAfter: true}, nil
	}
	req.data = data[:size]
	return req, nil
}
