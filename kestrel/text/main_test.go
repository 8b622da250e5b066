package text_test

import (
	"bufio"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
	"github.com/gmq/gmq/internal/budget"
	"github.com/gmq/gmq/internal/tcpserver"
	kestreltext "github.com/gmq/gmq/kestrel/text"
)

func TestMain(m *testing.M) { brokertest.Main(m) }

// start runs a fresh broker (a real Redis, flushed) and a text protocol
// server over its dispatcher on 127.0.0.1:0, with the defaults the broker
// gives kestrel's port, changed by tweak (may be nil). It returns the
// broker and the server's address; both stop when the test ends.
func start(t *testing.T, tweak func(*kestreltext.Options)) (*brokertest.Broker, string) {
	t.Helper()
	b := brokertest.Fresh(t, nil)
	cfg := config.Default()
	opts := kestreltext.Options{Version: "test", MaxItemSize: cfg.MaxBody, MaxRequest: cfg.MaxRequestBody,
		MaxOpenReads: cfg.KestrelMaxOpenReads, DefaultTTR: cfg.DefaultTTR,
		Options: tcpserver.Options{ReadTimeout: cfg.ReadTimeout, Budget: budget.New(cfg.BodyMemory), RequestTimeout: cfg.RequestTimeout,
			Log: slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))}}
	if tweak != nil {
		tweak(&opts)
	}
	s := kestreltext.New(b.Dispatcher, opts)
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
	return b, ln.Addr().String()
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// wire is a raw text-protocol connection for transcript tests.
type wire struct {
	t  *testing.T
	nc net.Conn
	r  *bufio.Reader
}

func dial(t *testing.T, addr string) *wire {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &wire{t: t, nc: nc, r: bufio.NewReaderSize(nc, 1<<20)}
}

// replyWait is how long an answer is waited for: only one that never comes
// waits that long, and a loaded machine may take seconds over one.
const replyWait = time.Minute

// reply reads one answer line, its LF included; a closed connection reads
// as "EOF".
func (w *wire) reply() string {
	w.t.Helper()
	_ = w.nc.SetReadDeadline(time.Now().Add(replyWait))
	line, err := w.r.ReadString('\n')
	if err == io.EOF && line == "" {
		return "EOF"
	}
	if err != nil {
		return line + "ERR " + err.Error()
	}
	return line
}

func (w *wire) send(s string) {
	w.t.Helper()
	if _, err := io.WriteString(w.nc, s); err != nil {
		w.t.Fatal(err)
	}
}

// must sends s and checks the answers that follow, a line each.
func (w *wire) must(s string, want ...string) {
	w.t.Helper()
	w.send(s)
	w.expect(clip(s), want...)
}

func (w *wire) expect(what string, want ...string) {
	w.t.Helper()
	for _, line := range want {
		if got := w.reply(); got != line {
			w.t.Fatalf("%q: got %q, want %q", what, got, line)
		}
	}
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
