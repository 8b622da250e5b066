package beanstalk_test

import (
	"bufio"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// wire is a raw protocol connection for tests: it sends bytes and reads
// replies the way a client does (a line, plus a body for RESERVED, FOUND and OK).
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
	return &wire{t: t, nc: nc, r: bufio.NewReader(nc)}
}

func (w *wire) send(s string) {
	w.t.Helper()
	if _, err := w.nc.Write([]byte(s)); err != nil {
		w.t.Fatal(err)
	}
}

// reply reads one reply, waiting at most limit; "" if none came.
func (w *wire) reply(limit time.Duration) string {
	w.t.Helper()
	if err := w.nc.SetReadDeadline(time.Now().Add(limit)); err != nil {
		w.t.Fatal(err)
	}
	line, err := w.r.ReadString('\n')
	if err != nil {
		if ne, ok := err.(net.Error); ok && ne.Timeout() && line == "" {
			return ""
		}
		return "ERR " + err.Error()
	}
	fields := strings.Fields(line)
	size := -1
	switch {
	case len(fields) == 3 && (fields[0] == "RESERVED" || fields[0] == "FOUND"):
		size, _ = strconv.Atoi(fields[2])
	case len(fields) == 2 && fields[0] == "OK":
		size, _ = strconv.Atoi(fields[1])
	}
	if size < 0 {
		return line
	}
	body := make([]byte, size+2)
	if _, err := readFull(w.r, body); err != nil {
		return line + "ERR " + err.Error()
	}
	return line + string(body)
}

func readFull(r *bufio.Reader, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := r.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// replyWait is how long do waits for a reply: only a reply that never
// comes waits that long, and a loaded machine may take seconds over one (or
// over the job a reserve-with-timeout waits for).
const replyWait = time.Minute

// do sends a command and returns its reply.
func (w *wire) do(s string) string {
	w.t.Helper()
	w.send(s)
	return w.reply(replyWait)
}

func (w *wire) must(send, want string) {
	w.t.Helper()
	if got := w.do(send); got != want {
		w.t.Fatalf("%q: got %q, want %q", clip(send), got, want)
	}
}

// put puts a job and returns its id.
func (w *wire) put(pri, delay, ttr int, body string) uint64 {
	w.t.Helper()
	got := w.do(fmt.Sprintf("put %d %d %d %d\r\n%s\r\n", pri, delay, ttr, len(body), body))
	var id uint64
	if _, err := fmt.Sscanf(got, "INSERTED %d\r\n", &id); err != nil {
		w.t.Fatalf("put: %q", got)
	}
	return id
}

// clip shortens a long command for a failure message.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
