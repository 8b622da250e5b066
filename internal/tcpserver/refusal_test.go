package tcpserver

import (
	"bufio"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gmq/gmq/job"
)

// Every frame reader's refusal is told apart here once, wrapped or not;
// the connection's own failures are no fault.
func TestFaultOf(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want Fault
	}{
		{nil, NoFault},
		{errors.New("read: connection reset"), NoFault},
		{ErrLineTooLong, FaultLineTooLong},
		{fmt.Errorf("put: %w", ErrTooLarge), FaultTooLarge},
		{fmt.Errorf("%w: too many request bodies are being read at once", job.ErrBusy), FaultBusy},
		{fmt.Errorf("%w: it begins with 'x', not {", Malformed("not a JSON-RPC request")), FaultMalformed},
	} {
		if got := FaultOf(tc.err); got != tc.want {
			t.Errorf("FaultOf(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}

// A handler's failure is told as its kind says, and says whether the
// connection reads on.
func TestAnswer(t *testing.T) {
	for _, tc := range []struct {
		err    error
		told   string
		readOn bool
	}{
		{nil, "", true},
		{&ClientErr{Line: "CLIENT_ERROR bad"}, "client CLIENT_ERROR bad", true},
		{fmt.Errorf("get: %w", &ClientErr{Line: "ERROR", Close: true}), "client ERROR", false},
		{&StoreErr{Op: "set", Err: job.ErrFull}, "store set", true},
		{&StoreErr{Op: "get", Err: job.ErrUnavailable}, "store get", false},
		{ErrClose, "", false},
		{errors.New("a handler's bug"), "", false},
	} {
		var told string
		a := Answers{
			Client: func(e *ClientErr) { told = "client " + e.Line },
			Store:  func(e *StoreErr) bool { told = "store " + e.Op; return errors.Is(e, job.ErrFull) },
		}
		if readOn := a.Answer(tc.err); told != tc.told || readOn != tc.readOn {
			t.Errorf("Answer(%v): told %q, reads on %v; want %q, %v", tc.err, told, readOn, tc.told, tc.readOn)
		}
	}
}

// A line longer than the reader's buffer comes in chunks, each saying more
// follows, and is no error.
func TestReadChunk(t *testing.T) {
	r := bufio.NewReaderSize(strings.NewReader(strings.Repeat("x", 40)+"\nend"), 16)
	var line []byte
	for {
		chunk, more, err := ReadChunk(r)
		if err != nil {
			t.Fatal(err)
		}
		line = append(line, chunk...)
		if !more {
			break
		}
	}
	if string(line) != strings.Repeat("x", 40)+"\n" {
		t.Fatalf("line %q", line)
	}
	if chunk, more, err := ReadChunk(r); string(chunk) != "end" || more || err == nil {
		t.Fatalf("the rest: %q %v %v, want \"end\" and the reader's EOF", chunk, more, err)
	}
}

func TestASCIILower(t *testing.T) {
	if got := ASCIILower("GeTs\xffÄ"); got != "gets\xffÄ" {
		t.Fatalf("%q", got)
	}
}
