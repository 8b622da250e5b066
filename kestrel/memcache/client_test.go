package memcache_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
)

func TestMain(m *testing.M) { brokertest.Main(m) }

// wire is a raw memcache-protocol connection for transcript tests.
type wire struct {
	t  *testing.T
	nc net.Conn
	r  *bufio.Reader
}

func dial(t *testing.T, addr string) *wire {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &wire{t: t, nc: nc, r: bufio.NewReaderSize(nc, 1<<20)}
}

// reply reads one whole answer within limit: a line, or a VALUE with its
// data and END, or STAT lines to END. A closed connection reads as "EOF".
func (w *wire) reply(limit time.Duration) string {
	w.t.Helper()
	_ = w.nc.SetReadDeadline(time.Now().Add(limit))
	line, err := w.r.ReadString('\n')
	if err == io.EOF && line == "" {
		return "EOF"
	}
	if err != nil {
		return "ERR " + err.Error()
	}
	out := line
	switch {
	case strings.HasPrefix(line, "VALUE "):
		f := strings.Fields(line)
		n, _ := strconv.Atoi(f[3])
		data := make([]byte, n+2)
		if _, err := io.ReadFull(w.r, data); err != nil {
			return out + "ERR " + err.Error()
		}
		end, _ := w.r.ReadString('\n')
		out += string(data) + end
	case strings.HasPrefix(line, "STAT "):
		for !strings.HasPrefix(line, "END") {
			if line, err = w.r.ReadString('\n'); err != nil {
				return out + "ERR " + err.Error()
			}
			out += line
		}
	}
	return out
}

// replyWait is how long do waits for an answer: only one that never comes
// waits that long, and a loaded machine may take seconds over one.
const replyWait = time.Minute

func (w *wire) do(s string) string {
	w.t.Helper()
	if _, err := io.WriteString(w.nc, s); err != nil {
		w.t.Fatal(err)
	}
	return w.reply(replyWait)
}

func (w *wire) must(send, want string) {
	w.t.Helper()
	if got := w.do(send); got != want {
		w.t.Fatalf("%q: got %q, want %q", clip(send), got, want)
	}
}

func (w *wire) set(queue, data string) {
	w.t.Helper()
	w.must(fmt.Sprintf("set %s 0 0 %d\r\n%s\r\n", queue, len(data), data), "STORED\r\n")
}

func value(queue, data string) string {
	return fmt.Sprintf("VALUE %s 0 %d\r\n%s\r\nEND\r\n", queue, len(data), data)
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
