package tcpserver

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestPassingAcceptErrors(t *testing.T) {
	cases := []struct {
		err  error
		pass bool
	}{
		{&net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}, true},
		{&net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.ENFILE)}, true},
		{fmt.Errorf("wrapped: %w", syscall.ECONNABORTED), true},
		{net.ErrClosed, false},
		{errors.New("something else"), false},
	}
	for _, c := range cases {
		if got := passing(c.err); got != c.pass {
			t.Errorf("passing(%v) = %v, want %v", c.err, got, c.pass)
		}
	}
}

func TestBurstLogsOneLinePerBurst(t *testing.T) {
	var out bytes.Buffer
	// The 50 events must come within Every: a second is the margin for a
	// loaded machine (they take microseconds).
	b := &Burst{Log: slog.New(slog.NewTextHandler(&out, nil)), Msg: "refused", Every: time.Second}
	for range 50 {
		b.Event("listener", "x")
	}
	if n := strings.Count(out.String(), "refused"); n != 1 {
		t.Fatalf("%d lines for a burst of 50, want 1:\n%s", n, out.String())
	}
	time.Sleep(1100 * time.Millisecond) // past Every: a lower bound
	b.Event("listener", "x")
	if !strings.Contains(out.String(), "more_since_last_line=49") {
		t.Fatalf("the next line does not count the quiet ones:\n%s", out.String())
	}
}
