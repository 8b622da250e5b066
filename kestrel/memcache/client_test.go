package memcache_test

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/kestrel/internal/kestreltest"
)

func TestMain(m *testing.M) { brokertest.Main(m) }

// wire is a raw memcache-protocol connection for transcript tests.
type wire struct{ *kestreltest.Wire }

func dial(t *testing.T, addr string) *wire { return &wire{kestreltest.Dial(t, addr)} }

// fresh starts a fresh broker (a real Redis, flushed) and dials its
// memcache port.
func fresh(t *testing.T) (*brokertest.Broker, *wire) {
	t.Helper()
	b := brokertest.Fresh(t, nil)
	return b, dial(t, b.KestrelAddr)
}

// reply reads one whole answer within kestreltest.ReplyWait: a line
// (kestreltest.Wire.Line: a closed connection reads as "EOF"), or a VALUE
// with its data and END, or STAT lines to END.
func (w *wire) reply() string {
	w.T.Helper()
	line := w.Line()
	var err error
	out := line
	switch {
	case strings.HasPrefix(line, "VALUE "):
		f := strings.Fields(line)
		n, _ := strconv.Atoi(f[3])
		data := make([]byte, n+2)
		if _, err := io.ReadFull(w.R, data); err != nil {
			return out + "ERR " + err.Error()
		}
		end, _ := w.R.ReadString('\n')
		out += string(data) + end
	case strings.HasPrefix(line, "STAT "):
		for !strings.HasPrefix(line, "END") {
			if line, err = w.R.ReadString('\n'); err != nil {
				return out + "ERR " + err.Error()
			}
			out += line
		}
	}
	return out
}

// do sends s and reads its whole answer (reply).
func (w *wire) do(s string) string {
	w.T.Helper()
	w.Send(s)
	return w.reply()
}

func (w *wire) must(send, want string) {
	w.T.Helper()
	if got := w.do(send); got != want {
		w.T.Fatalf("%q: got %q, want %q", kestreltest.Clip(send), got, want)
	}
}

func (w *wire) set(queue, data string) {
	w.T.Helper()
	w.must(fmt.Sprintf("set %s 0 0 %d\r\n%s\r\n", queue, len(data), data), "STORED\r\n")
}

func value(queue, data string) string {
	return fmt.Sprintf("VALUE %s 0 %d\r\n%s\r\nEND\r\n", queue, len(data), data)
}
