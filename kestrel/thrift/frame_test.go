package thrift

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/gmq/gmq/internal/budget"
	"github.com/gmq/gmq/job"
)

// frameOf is a frame holding msg.
func frameOf(msg string) string {
	return string(binary.BigEndian.AppendUint32(nil, uint32(len(msg)))) + msg
}

// readFrame reads whole frames, refuses one over the limit (reading only
// its head, the connection to close after its answer) and one the budget
// has no room for (reading it all, so the next frame is read right).
func TestReadFrame(t *testing.T) {
	busy := budget.New(budget.Unit) // one unit, which blocker holds
	blocker := budget.Hold{Budget: busy, Ctx: context.Background()}
	if err := blocker.Cover(1); err != nil {
		t.Fatal(err)
	}
	defer blocker.Release()
	big := strings.Repeat("b", 10_000) // past the connection's own read buffer: needs the budget
	for _, tc := range []struct {
		name    string
		in      string
		budget  *budget.Budget
		want    []string // each frame's message
		refused []error  // each frame's refusal
		last    bool     // the last frame read closes the connection
		err     bool     // the stream ends in an error
	}{
		{name: "two", in: frameOf("one") + frameOf("two"), want: []string{"one", "two"}, refused: []error{nil, nil}, err: true},
		{name: "empty", in: frameOf(""), want: []string{""}, refused: []error{nil}, err: true},
		{name: "big", in: frameOf(big), want: []string{big}, refused: []error{nil}, err: true},
		{name: "over the limit", in: string(binary.BigEndian.AppendUint32(nil, 1<<20)) + "head",
			want: []string{"head"}, refused: []error{job.ErrInvalid}, last: true},
		{name: "no budget", in: frameOf(big) + frameOf("next"), budget: busy,
			want: []string{big[:4096], "next"}, refused: []error{job.ErrBusy, nil}, err: true},
		{name: "cut short", in: frameOf("whole")[:6], err: true},
	} {
		r := bufio.NewReaderSize(strings.NewReader(tc.in), 4096)
		hold := &budget.Hold{Budget: tc.budget, Ctx: context.Background()}
		for i := 0; ; i++ {
			f, err := readFrame(r, 1<<16, hold)
			hold.Release()
			if err != nil {
				if !tc.err || i != len(tc.want) {
					t.Fatalf("%s: frame %d: %v", tc.name, i, err)
				}
				break
			}
			if i >= len(tc.want) || string(f.msg) != tc.want[i] || !errors.Is(f.refused, tc.refused[i]) || (f.refused == nil) != (tc.refused[i] == nil) {
				t.Fatalf("%s: frame %d: %.20q, %v", tc.name, i, f.msg, f.refused)
			}
			if f.last {
				if !tc.last || i != len(tc.want)-1 {
					t.Fatalf("%s: frame %d is the last", tc.name, i)
				}
				break
			}
		}
	}
}

// A collection that claims more elements than its frame's bytes could
// hold is refused before anything is made for it.
func TestBoundedProtocol(t *testing.T) {
	cfg := &thrift.TConfiguration{MaxMessageSize: 1 << 20}
	for _, tc := range []struct {
		name  string
		elem  thrift.TType
		count int32
		tail  int // bytes after the header
		ok    bool
	}{
		{"binaries that fit", thrift.STRING, 3, 12, true},
		{"binaries that cannot", thrift.STRING, 4, 12, false},
		{"ids that fit", thrift.I64, 2, 16, true},
		{"ids that cannot", thrift.I64, 3, 16, false},
		{"a huge claim", thrift.STRING, 1 << 30, 0, false},
	} {
		msg := append([]byte{byte(tc.elem)}, binary.BigEndian.AppendUint32(nil, uint32(tc.count))...)
		p := newBoundedProtocol(append(msg, make([]byte, tc.tail)...), cfg)
		_, n, err := p.ReadListBegin(context.Background())
		if (err == nil) != tc.ok || (tc.ok && n != int(tc.count)) {
			t.Errorf("%s: %d, %v", tc.name, n, err)
		}
		p = newBoundedProtocol(append(msg, make([]byte, tc.tail)...), cfg)
		if _, _, err := p.ReadSetBegin(context.Background()); (err == nil) != tc.ok {
			t.Errorf("%s, as a set: %v", tc.name, err)
		}
	}
}

// An id carries the job's number and its attempt (modulo 2^10); ids no
// get hands out carry nothing.
func TestIDs(t *testing.T) {
	for _, tc := range []struct {
		number  uint64
		reserve int
		ok      bool
	}{
		{number: 1, reserve: 1, ok: true},
		{number: 123_456_789, reserve: 7, ok: true},
		{number: maxNumber - 1, reserve: 1023, ok: true},
		{number: 5, reserve: 1025, ok: true}, // kept modulo 1024: 1
		{number: maxNumber, reserve: 1},
		{number: 0, reserve: 1},
	} {
		id, ok := packID(&job.Job{ID: tc.number, Reserves: tc.reserve})
		if ok != tc.ok {
			t.Fatalf("pack %d.%d: %v", tc.number, tc.reserve, ok)
		}
		if !ok {
			continue
		}
		if id <= 0 {
			t.Fatalf("pack %d.%d: %d", tc.number, tc.reserve, id)
		}
		number, attempt, ok := unpackID(id)
		if !ok || number != tc.number || attempt != tc.reserve%1024 {
			t.Fatalf("unpack %d: %d.%d %v, want %d.%d", id, number, attempt, ok, tc.number, tc.reserve%1024)
		}
	}
	for _, id := range []int64{0, -1, 1024, 5 << attemptBits} {
		if _, _, ok := unpackID(id); ok {
			t.Errorf("unpack %d: an id no get hands out", id)
		}
	}
}
