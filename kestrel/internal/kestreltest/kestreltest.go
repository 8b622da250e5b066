// Package kestreltest is what the tests of kestrel's three ports share: a
// port served on 127.0.0.1:0 until the test ends (Serve) with the options
// the broker gives it (Options), its log in the test's (Log), and a raw
// line connection for transcripts (Wire). Tests only.
package kestreltest

import (
	"bufio"
	"bytes"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gmq/gmq/config"
	"github.com/gmq/gmq/internal/budget"
	"github.com/gmq/gmq/internal/tcpserver"
)

// Options are the options the broker gives a kestrel port, from config's
// defaults, with the port's log at Warn in the test's (Log).
func Options(t testing.TB) tcpserver.Options {
	cfg := config.Default()
	return tcpserver.Options{ReadTimeout: cfg.ReadTimeout, Budget: budget.New(cfg.BodyMemory), RequestTimeout: cfg.RequestTimeout,
		Log: Log(t)}
}

// Log is a logger at Warn that writes to t's log.
func Log(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// A Server is a port to serve: kestrel's memcache, text or thrift server.
type Server interface {
	Serve(net.Listener) error
	Close()
}

// Serve runs s on 127.0.0.1:0 until the test ends, then closes it and
// checks that Serve returned nil; it returns the address.
func Serve(t testing.TB, s Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return ln.Addr().String()
}

// ReplyWait is how long an answer is waited for: only one that never comes
// waits that long, and a loaded machine may take seconds over one.
const ReplyWait = time.Minute

// Wire is a raw connection to a line protocol's port, for transcripts.
type Wire struct {
	T  testing.TB
	NC net.Conn
	R  *bufio.Reader
}

// Dial connects to addr until the test ends.
func Dial(t testing.TB, addr string) *Wire {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &Wire{T: t, NC: nc, R: bufio.NewReaderSize(nc, 1<<20)}
}

// Send writes s.
func (w *Wire) Send(s string) {
	w.T.Helper()
	if _, err := io.WriteString(w.NC, s); err != nil {
		w.T.Fatal(err)
	}
}

// Line reads one answer line within ReplyWait, its LF included; a closed
// connection reads as "EOF".
func (w *Wire) Line() string {
	w.T.Helper()
	_ = w.NC.SetReadDeadline(time.Now().Add(ReplyWait))
	line, err := w.R.ReadString('\n')
	if err == io.EOF && line == "" {
		return "EOF"
	}
	if err != nil {
		return line + "ERR " + err.Error()
	}
	return line
}

// Must sends s and checks the answers that follow, a line each.
func (w *Wire) Must(s string, want ...string) {
	w.T.Helper()
	w.Send(s)
	w.Expect(Clip(s), want...)
}

// Expect checks the next answer lines, what naming what they answer.
func (w *Wire) Expect(what string, want ...string) {
	w.T.Helper()
	for _, line := range want {
		if got := w.Line(); got != line {
			w.T.Fatalf("%q: got %q, want %q", what, got, line)
		}
	}
}

// Clip shortens s for a failure's message.
func Clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// FuzzRequests fuzzes a line protocol's frame reader: f is given seeds,
// and each input is read as requests with read, at most 50, until read
// fails (the connection would end there) or check, which asserts what read
// made of one, says the connection closes after it.
func FuzzRequests[R any](f *testing.F, seeds []string, read func(r *bufio.Reader, hold *budget.Hold) (R, error),
	check func(t *testing.T, req R) (readOn bool)) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bufio.NewReader(bytes.NewReader(data))
		for range 50 {
			req, err := read(r, &budget.Hold{})
			if err != nil || !check(t, req) {
				return
			}
		}
	})
}
