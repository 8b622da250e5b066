package tcpserver

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/gmq/gmq/internal/budget"
	"github.com/gmq/gmq/job"
)

// ReadBody reads exactly n bytes, however they come, into no more memory
// than n; a body cut short is an error.
func TestReadBody(t *testing.T) {
	for _, n := range []int{0, 1, 100, ReadBuffer, ReadBuffer + 1, 65535, 1 << 20} {
		body := strings.Repeat("x", n) + "NEXT"
		for name, r := range map[string]io.Reader{
			"whole":       strings.NewReader(body),
			"a byte each": iotest.OneByteReader(strings.NewReader(body)),
			"halves":      iotest.HalfReader(strings.NewReader(body)),
		} {
			if name == "a byte each" && n > 70000 {
				continue
			}
			got, err := ReadBody(r, n, &budget.Hold{})
			if err != nil || len(got) != n || cap(got) > max(n, ReadBuffer) || !bytes.Equal(got, []byte(body[:n])) {
				t.Fatalf("%d bytes, %s: %d bytes (cap %d), %v", n, name, len(got), cap(got), err)
			}
		}
		if n > 0 {
			if _, err := ReadBody(strings.NewReader(body[:n-1]), n, &budget.Hold{}); err != io.ErrUnexpectedEOF {
				t.Errorf("%d bytes cut short: %v, want ErrUnexpectedEOF", n, err)
			}
		}
	}
}

// A body reserves its memory from the shared budget as it grows, past the
// connection's own first few KiB; with the budget spent, the body is read
// and thrown away (the next request still frames) and the error is busy.
func TestReadBodyBudget(t *testing.T) {
	shared := budget.New(2 * budget.Unit)
	small := budget.Hold{Budget: shared, Ctx: context.Background()}
	if _, err := ReadBody(strings.NewReader(strings.Repeat("x", ReadBuffer)), ReadBuffer, &small); err != nil || small.Take() != 0 {
		t.Fatalf("a body of the connection's own size took budget: %v", err)
	}
	first := budget.Hold{Budget: shared, Ctx: context.Background()}
	if _, err := ReadBody(strings.NewReader(strings.Repeat("x", 40<<10)), 40<<10, &first); err != nil {
		t.Fatalf("40 KiB within a budget of 64 KiB: %v", err)
	}
	r := bufio.NewReader(strings.NewReader(strings.Repeat("y", 40<<10) + "NEXT"))
	second := budget.Hold{Budget: shared, Ctx: context.Background()}
	start := time.Now()
	if _, err := ReadBody(r, 40<<10, &second); !errors.Is(err, job.ErrBusy) {
		t.Fatalf("40 KiB more over the budget: %v, want busy", err)
	}
	if waited := time.Since(start); waited < budget.Wait {
		t.Errorf("refused after %v, before budget.Wait", waited)
	}
	if rest, _ := io.ReadAll(r); string(rest) != "NEXT" {
		t.Errorf("after the refused body the reader is at %q, want NEXT", rest)
	}
	first.Release()
	second.Release()
	again := budget.Hold{Budget: shared, Ctx: context.Background()}
	if _, err := ReadBody(strings.NewReader(strings.Repeat("x", 60<<10)), 60<<10, &again); err != nil {
		t.Fatalf("the budget given back was not free again: %v", err)
	}
}
