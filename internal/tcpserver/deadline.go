package tcpserver

import (
	"context"
	"time"
)

// Deadline hands a connection's requests a context that ends no later than
// timeout after each request begins, and no sooner than four fifths of it:
// one context (and one timer) serves every request of the next timeout/5.
// A context.WithTimeout for each request cost the beanstalkd front end 5%
// of its CPU (issue 22's profile: the timer's start and stop). A
// connection runs its requests one at a time, so Deadline has no lock; Stop
// ends the last context.
type Deadline struct {
	parent  context.Context
	timeout time.Duration
	ctx     context.Context
	cancel  context.CancelFunc
	renewAt time.Time
}

// NewDeadline bounds the requests run under parent by timeout.
func NewDeadline(parent context.Context, timeout time.Duration) *Deadline {
	return &Deadline{parent: parent, timeout: timeout}
}

// Context is the context for a request that begins now.
func (d *Deadline) Context() context.Context {
	now := time.Now()
	if d.ctx == nil || !now.Before(d.renewAt) {
		d.Stop()
		d.ctx, d.cancel = context.WithTimeout(d.parent, d.timeout)
		d.renewAt = now.Add(d.timeout / 5)
	}
	return d.ctx
}

// Stop ends the current context, if any: at the connection's end.
func (d *Deadline) Stop() {
	if d.cancel != nil {
		d.cancel()
		d.cancel = nil
	}
}
