package thrift

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/gmq/gmq/internal/budget"
	"github.com/gmq/gmq/internal/tcpserver"
	"github.com/gmq/gmq/job"
)

// headBytes is how much of a refused frame is read to answer it: its
// message's header (a method name and a sequence id) fits many times.
const headBytes = 256

// A frame is one framed request as read: its message, or, when it is
// refused unread (refused: over MaxRequest, or no room in the body
// budget), its first bytes, enough to name the call the refusal answers.
type frame struct {
	msg     []byte
	refused error
	last    bool // the connection closes after it: the rest of a frame too big to read is still unread
}

// readFrame reads the next frame: its 4-byte big-endian length, then that
// many bytes, held within hold as they arrive (tcpserver.GrowBody), never
// all at once: a client that announces a large frame and sends little
// holds little. A frame over maxRequest is not read: what has come of its
// first headBytes is, and the connection closes after its answer. When the budget stays
// short, the rest of the frame is read and dropped, so the next is framed
// right, and the call is answered "try again". err is the connection's
// failure (closed, timed out).
func readFrame(r *bufio.Reader, maxRequest int, hold *budget.Hold) (frame, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return frame{}, err
	}
	n := int64(binary.BigEndian.Uint32(size[:]))
	if n > int64(maxRequest) {
		head := make([]byte, min(n, headBytes))
		got, err := io.ReadAtLeast(r, head, 1) // what has come: a header that did not fit is not answered
		if err != nil {
			return frame{}, err
		}
		return frame{msg: head[:got], last: true, refused: fmt.Errorf("a %d-byte request, the limit is %d bytes ([server] max_request_body): %w",
			n, maxRequest, job.ErrInvalid)}, nil
	}
	msg := make([]byte, 0, min(int(n), tcpserver.ReadBuffer))
	for len(msg) < int(n) {
		if len(msg) == cap(msg) {
			grown, err := tcpserver.GrowBody(msg, len(msg)+1, int(n), hold)
			if tcpserver.FaultOf(err) == tcpserver.FaultBusy { // read on: the rest of the frame is dropped
				if _, skipErr := io.CopyN(io.Discard, r, n-int64(len(msg))); skipErr != nil {
					return frame{}, skipErr
				}
				return frame{msg: msg, refused: err}, nil
			}
			if err != nil {
				return frame{}, err
			}
			msg = grown
		}
		got, err := r.Read(msg[len(msg):min(cap(msg), int(n))])
		msg = msg[:len(msg)+got]
		if err != nil && len(msg) < int(n) {
			return frame{}, err
		}
	}
	return frame{msg: msg}, nil
}

// boundedProtocol reads a frame's message with Thrift's binary protocol,
// and refuses a list, set or map that claims more elements than the bytes
// left could hold: the generated code makes its slice that long before it
// reads one, so a 20-byte frame claiming 2^31 items would otherwise make
// gigabytes. Each element takes at least minBytes of the frame, so what a
// frame's collections make is bounded by a small multiple of its length
// (MaxMessageSize bounds a string's or binary's length in the same way).
type boundedProtocol struct {
	thrift.TProtocol
	left *thrift.TMemoryBuffer
}

// newBoundedProtocol reads msg within cfg.
func newBoundedProtocol(msg []byte, cfg *thrift.TConfiguration) *boundedProtocol {
	buf := &thrift.TMemoryBuffer{Buffer: bytes.NewBuffer(msg)}
	return &boundedProtocol{TProtocol: thrift.NewTBinaryProtocolConf(buf, cfg), left: buf}
}

func (p *boundedProtocol) ReadListBegin(ctx context.Context) (thrift.TType, int, error) {
	t, n, err := p.TProtocol.ReadListBegin(ctx)
	return t, n, p.check(err, n, minBytes(t))
}

func (p *boundedProtocol) ReadSetBegin(ctx context.Context) (thrift.TType, int, error) {
	t, n, err := p.TProtocol.ReadSetBegin(ctx)
	return t, n, p.check(err, n, minBytes(t))
}

func (p *boundedProtocol) ReadMapBegin(ctx context.Context) (thrift.TType, thrift.TType, int, error) {
	k, v, n, err := p.TProtocol.ReadMapBegin(ctx)
	return k, v, n, p.check(err, n, minBytes(k)+minBytes(v))
}

// check refuses n elements of at least each bytes when fewer bytes are left.
func (p *boundedProtocol) check(err error, n, each int) error {
	if err != nil {
		return err
	}
	if left := p.left.Len(); n > left/each {
		return thrift.NewTProtocolExceptionWithType(thrift.SIZE_LIMIT,
			fmt.Errorf("%d elements claimed with %d bytes left in the frame", n, left))
	}
	return nil
}

// minBytes is the fewest bytes the binary protocol writes a value of type
// t in: a string or binary its length, a struct its stop byte, a list or
// set its element type and count.
func minBytes(t thrift.TType) int {
	switch t {
	case thrift.I16:
		return 2
	case thrift.I32, thrift.STRING:
		return 4
	case thrift.I64, thrift.DOUBLE:
		return 8
	case thrift.LIST, thrift.SET:
		return 5
	case thrift.MAP:
		return 6
	}
	return 1 // BOOL, BYTE, STRUCT, and any other
}
