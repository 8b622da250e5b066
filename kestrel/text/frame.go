package text

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"

	"github.com/gmq/gmq/internal/budget"
	"github.com/gmq/gmq/internal/tcpserver"
)

// maxLine is the longest command line, its line end excluded: a queue name
// (at most 200 bytes) and a number fit many times over.
const maxLine = 1024

// maxItems is the most items one put carries, kestrel's MAX_PUT_BUFFER.
const maxItems = 1024

// request is one framed request: the command line split at spaces, the verb
// lower-cased (as kestrel's codec does), and a put's items.
type request struct {
	verb  string
	args  []string
	items []string // a put's items, in order, each within the item limit
	// dropped counts a put's items read but not kept: over the item limit,
	// or past maxItems. They are not put, so not counted in the answer.
	dropped int
	// reply, when set, is answered instead of running the request (a
	// framing error), and closeAfter closes the connection after it.
	reply      string
	closeAfter bool
}

// limits bound what one request may hold.
type limits struct {
	maxItem    int // an item's bytes
	maxRequest int // a put's bytes, its lines and line ends
}

// readLine reads a command line up to its LF, and strips the LF and a CR
// before it.
func readLine(r *bufio.Reader) (string, error) { return tcpserver.ReadLine(r, maxLine) }

// readRequest frames the next request. A line that ends in ':' is followed
// by items, one a line, up to an empty line (kestrel reads them for any
// verb; only put uses them). err is the connection's failure (closed,
// timed out); everything else the client sent is a request, maybe one to
// refuse (refusal). The items' memory is reserved with hold as they
// arrive; when the budget stays short, the rest is read and dropped and
// the answer says to try again (the connection stays usable).
func readRequest(r *bufio.Reader, lim limits, hold *budget.Hold) (request, error) {
	req, err := frameRequest(r, lim, hold)
	if f := tcpserver.FaultOf(err); f != tcpserver.NoFault {
		return refusal(f, err, lim), nil
	}
	return req, err
}

// refusal is the answer to a request refused as it was framed: a line or
// a put too long closes the connection (what follows cannot be framed);
// items the budget had no room for were read and dropped, so the
// connection reads on.
func refusal(f tcpserver.Fault, err error, lim limits) request {
	switch f {
	case tcpserver.FaultBusy:
		return request{reply: "-" + err.Error() + ": try again"}
	case tcpserver.FaultTooLarge:
		return request{reply: "-Put over the request limit of " + strconv.Itoa(lim.maxRequest) +
			" bytes ([server] max_request_body).", closeAfter: true}
	case tcpserver.FaultLineTooLong:
		return request{reply: "-Line too long (the limit is " + strconv.Itoa(maxLine) + " bytes).", closeAfter: true}
	}
	return request{reply: "-" + err.Error() + ".", closeAfter: true} // a fault its framing does not raise today
}

// frameRequest is readRequest but for the faults it refuses.
func frameRequest(r *bufio.Reader, lim limits, hold *budget.Hold) (request, error) {
	line, err := readLine(r)
	if err != nil {
		return request{}, err
	}
	head, hasItems := strings.CutSuffix(line, ":")
	fields := split(head)
	req := request{verb: tcpserver.ASCIILower(fields[0]), args: fields[1:]}
	if !hasItems {
		if req.verb == "put" {
			// Kestrel would put nothing and run the items that follow as
			// commands (a "delete q" among them would delete q).
			return request{reply: "-A put's line ends in ':' (put <queue> [expiration_ms]:).", closeAfter: true}, nil
		}
		return req, nil
	}
	ir := itemReader{r: r, lim: lim, hold: hold, size: len(line) + 1}
	for {
		end, err := ir.line()
		if err != nil {
			return request{}, err
		}
		if end {
			break
		}
	}
	if ir.busy != nil {
		return request{}, ir.busy
	}
	req.items, req.dropped = ir.items(), ir.dropped
	return req, nil
}

// split splits a line at spaces as kestrel's (Java's) split does: empty
// fields between spaces stay, trailing ones go; there is always a verb,
// maybe empty.
func split(line string) []string {
	fields := strings.Split(line, " ")
	for len(fields) > 1 && fields[len(fields)-1] == "" {
		fields = fields[:len(fields)-1]
	}
	return fields
}

// itemReader reads a put's items into one buffer, back to back, growing it
// within the body budget as they arrive (tcpserver.GrowBody), so that a
// client that announces nothing and sends slowly holds only what it sent.
type itemReader struct {
	r    *bufio.Reader
	lim  limits
	hold *budget.Hold
	size int    // the put's bytes so far, its first line's included
	buf  []byte // the kept items
	ends []int  // where each kept item ends in buf
	// dropped counts the items not kept; busy is the budget's refusal,
	// after which nothing is kept.
	dropped int
	busy    error
}

// line reads one item line; end says it was the empty line that ends the
// items.
func (ir *itemReader) line() (end bool, err error) {
	start, n := len(ir.buf), 0 // n: the line's bytes, its LF included
	keep := ir.busy == nil && len(ir.ends)+ir.dropped < maxItems
	for {
		chunk, more, err := tcpserver.ReadChunk(ir.r)
		n += len(chunk)
		ir.size += len(chunk)
		if ir.size > ir.lim.maxRequest {
			return false, tcpserver.ErrTooLarge
		}
		if n <= 2 && err == nil && !more && (n == 1 || chunk[0] == '\r') {
			return true, nil
		}
		if keep && n > ir.lim.maxItem+2 { // over the limit whatever its line end: read on, keep nothing
			keep, ir.buf = false, ir.buf[:start]
		}
		if keep {
			if keep = ir.grow(len(chunk)); keep {
				ir.buf = append(ir.buf, chunk...)
			}
		}
		if err != nil {
			return false, err
		}
		if !more {
			break
		}
	}
	if !keep { // what it read is not in buf: past maxItems, over the item limit, or busy (buf emptied)
		ir.dropped++
		return false, nil
	}
	item := bytes.TrimSuffix(bytes.TrimSuffix(ir.buf[start:], []byte("\n")), []byte("\r"))
	if len(item) > ir.lim.maxItem {
		ir.buf = ir.buf[:start]
		ir.dropped++
		return false, nil
	}
	ir.buf = ir.buf[:start+len(item)]
	ir.ends = append(ir.ends, len(ir.buf))
	return false, nil
}

// grow makes room for n more bytes in buf; false when the budget stayed
// short (busy), after which nothing more is kept.
func (ir *itemReader) grow(n int) bool {
	grown, err := tcpserver.GrowBody(ir.buf, len(ir.buf)+n, ir.lim.maxRequest, ir.hold)
	if err != nil {
		ir.busy, ir.buf, ir.ends = err, nil, nil
		return false
	}
	ir.buf = grown
	return true
}

// items are the kept items: one string, sliced.
func (ir *itemReader) items() []string {
	all := string(ir.buf)
	items := make([]string, len(ir.ends))
	for i, end := range ir.ends {
		start := 0
		if i > 0 {
			start = ir.ends[i-1]
		}
		items[i] = all[start:end]
	}
	return items
}
