package tcpserver

import (
	"errors"
	"log/slog"
	"net"
	"sync"
	"syscall"
	"time"
)

// Burst logs a run of like events (refused connections, failed accepts) as
// one line when it starts and then at most one line per Every, with how many
// came since, so that a flood costs a few log lines, not one per connection.
type Burst struct {
	Log   *slog.Logger
	Msg   string
	Every time.Duration

	mu    sync.Mutex
	last  time.Time
	quiet int // events since the last line
}

// Event records one event, logging it with args if no line was written
// within Every.
func (b *Burst) Event(args ...any) {
	b.mu.Lock()
	now := time.Now()
	if !b.last.IsZero() && now.Sub(b.last) < b.Every {
		b.quiet++
		b.mu.Unlock()
		return
	}
	since := b.quiet
	b.quiet, b.last = 0, now
	b.mu.Unlock()
	if since > 0 {
		args = append(args, "more_since_last_line", since)
	}
	b.Log.Warn(b.Msg, args...)
}

// passingAcceptErrors are accept failures that say nothing about the
// listener: the process (or the system) is out of file descriptors or
// memory for the moment, or one client went away before it was accepted.
var passingAcceptErrors = []error{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM,
	syscall.ECONNABORTED, syscall.ECONNRESET, syscall.EINTR, syscall.EPROTO}

// passing reports whether an accept error will pass, so the accept loop
// should wait and try again rather than stop the server.
func passing(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	for _, e := range passingAcceptErrors {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// acceptRetry waits out accept errors that pass, backing off from 5 ms to
// 1 s between tries as net/http does, and logs once per burst of them.
// One accept loop owns it.
type acceptRetry struct {
	backoff  time.Duration
	listener string
	burst    *Burst
}

func newAcceptRetry(log *slog.Logger, name string) *acceptRetry {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &acceptRetry{listener: name, burst: &Burst{Log: log, Every: 10 * time.Second,
		Msg: "accept failed; retrying with backoff (out of file descriptors? lower [server] max_connections or raise the file limit)"}}
}

// wait sleeps before the next try after err and says true, or says false
// when err will not pass.
func (r *acceptRetry) wait(err error) bool {
	if !passing(err) {
		return false
	}
	r.backoff = min(max(2*r.backoff, 5*time.Millisecond), time.Second)
	r.burst.Event("listener", r.listener, "err", err, "retry_in", r.backoff)
	time.Sleep(r.backoff)
	return true
}

// accepted ends a burst of failures.
func (r *acceptRetry) accepted() { r.backoff = 0 }
