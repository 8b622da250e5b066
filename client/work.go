package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"time"
)

// Handler does a popped job. It returns nil when the job is done (Work acks
// it), or an error saying why not (Work fails the job with the error's text:
// it is retried after its retry policy's backoff, or goes to its topic's dead
// set). A panic is recovered and fails the job likewise.
//
// Its context is not cancelled when Work is told to stop, so that a job in
// hand can finish; it is cancelled, with cause ErrLostJob, when the job's
// reservation is found lost, and with cause ErrCancelled when the job was
// cancelled (see Work).
type Handler func(ctx context.Context, j *Job) error

// ResultHandler is a Handler that also returns the job's result, for
// WorkResults to ack it with: any value encoding/json encodes (nil, or one
// that encodes as null: none). Where the job's topic keeps completed jobs
// (keep_completed), gmq keeps it with the job, and Get shows it as the
// job's Result. A Done (or *Done) is a result with follow-ups: jobs the
// ack pushes once it succeeds. With an error, the result is dropped and
// the job failed.
type ResultHandler func(ctx context.Context, j *Job) (any, error)

// ErrHandlerTimeout is the cause of a handler's cancelled context when it ran
// past WorkOptions.Timeout, or its job's own Timeout: Work fails the job
// with it once the handler returns, whatever the handler returned.
var ErrHandlerTimeout = errors.New("gmq: the handler ran out of time")

// ErrLostJob is the cause of a handler's cancelled context when a touch found
// the job no longer reserved for this worker: its TTR ran out first, and
// another worker may have it. Work neither acks nor fails such a job.
var ErrLostJob = errors.New("gmq: the job's reservation was lost")

// WorkOptions configure Work.
type WorkOptions struct {
	// Concurrency is how many jobs are handled at once, each by a goroutine
	// of its own that pops with a long poll (default 1).
	Concurrency int
	// Wait is each pop's long poll (default 20 s): a worker with nothing to
	// do asks again this often. A stop does not wait for it.
	Wait time.Duration
	// Log is told what Work survives (a pop that failed, an ack or a fail
	// refused, a handler's panic with its stack); nil: slog.Default().
	Log *slog.Logger
	// Timeout is the most a handler may take on a job (0: no limit); a job
	// pushed with a Timeout of its own has the shorter of the two. Past
	// it the handler's context is cancelled, with cause ErrHandlerTimeout,
	// and when the handler returns the job is failed with that reason (it
	// is retried after its backoff, or dies, by its retry policy). Go cannot
	// stop a goroutine: a handler that does not watch its context runs on
	// (its job still touched) until it returns.
	Timeout time.Duration
}

// DefaultWait is WorkOptions.Wait's default.
const DefaultWait = 20 * time.Second

func (o WorkOptions) withDefaults() WorkOptions {
	o.Concurrency = max(o.Concurrency, 1)
	if o.Wait <= 0 {
		o.Wait = DefaultWait
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	return o
}

// Work pops jobs from topics (the first listed that has one, as Pop) and runs
// handler on each, opts.Concurrency at a time, until ctx is done.
//
//   - A job done (handler returns nil) is acked, and the next is popped in
//     the same request when one is ready (AckJobAndPop); under WorkResults
//     the ack carries the handler's result, and a Done's follow-ups (the
//     next job is then popped on its own). Every ack, fail and touch
//     carries the job's Token, so it reaches that delivery only.
//   - A job that failed (an error, or a panic) is failed with the error's
//     text as its last_error (FailJob).
//   - While a handler runs past half the job's TTR, Work touches the job
//     every TTR/2, so that a long job is not delivered to another worker.
//     A touch that finds the job lost cancels the handler's context (cause
//     ErrLostJob).
//   - A job cancelled while its handler runs (Cancel) is learnt at the
//     next touch (every TTR/2), at a Progress the handler makes with its
//     context, or at the ack or fail: a 410. The first two cancel the
//     handler's context with cause ErrCancelled. The job has ended, so Work
//     neither acks nor fails it, whatever the handler returns, and logs it
//     (Info). A handler that finishes before its job's first touch is told
//     nothing: its ack's 410 is logged.
//   - When ctx is done, Work pops no more (a long poll under way is given
//     up), lets the handlers in hand finish on their own contexts, acks or
//     fails their jobs, and returns nil. A job the broker handed out in the
//     instant the pop was given up comes back after its TTR.
//   - A pop that fails is logged and tried again after a backoff (the broker
//     may be restarting); one the broker refuses for good (a 4xx such as 401,
//     a wrong token, or 400) stops Work as ctx would, and Work returns it.
//
// A worker that dies (SIGKILL, a crash) acks nothing: its jobs come back
// when their TTR runs out, to be popped again with the next Attempt.
func (c *Client) Work(ctx context.Context, topics []string, handler Handler, opts WorkOptions) error {
	if handler == nil {
		return errors.New("gmq: Work needs at least one topic and a handler")
	}
	return c.WorkResults(ctx, topics, func(ctx context.Context, j *Job) (any, error) { return nil, handler(ctx, j) }, opts)
}

// WorkResults is Work with a handler that returns a result, which the ack
// of a job done carries (its ack and pop too). A result encoding/json
// cannot encode, or one gmq refuses as over its topic's max_result (413),
// is logged and dropped, and the job acked without it: the job was done,
// and acked without its result it does not run again.
func (c *Client) WorkResults(ctx context.Context, topics []string, handler ResultHandler, opts WorkOptions) error {
	if len(topics) == 0 || handler == nil {
		return errors.New("gmq: Work needs at least one topic and a handler")
	}
	opts = opts.withDefaults()
	popCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	w := &worker{c: c, topics: topics, handler: handler, opts: opts, stop: stop}
	var wg sync.WaitGroup
	for range opts.Concurrency {
		wg.Go(func() { w.loop(popCtx) })
	}
	wg.Wait()
	if err := context.Cause(popCtx); err != nil && ctx.Err() == nil {
		return err // a refusal stopped it, not ctx
	}
	return nil
}

// worker is what Work's goroutines share.
type worker struct {
	c       *Client
	topics  []string
	handler ResultHandler
	opts    WorkOptions
	stop    context.CancelCauseFunc // stops every goroutine of the Work call, with why
}

// loop pops and handles jobs until ctx is done.
func (w *worker) loop(ctx context.Context) {
	var j *Job
	for failures := 0; ; {
		if j != nil { // in hand, even if ctx is done: finish it
			j = w.run(ctx, j)
			continue
		}
		if ctx.Err() != nil {
			return
		}
		var err error
		j, err = w.c.Pop(ctx, w.topics, w.opts.Wait)
		switch {
		case err == nil:
			failures = 0
		case ctx.Err() != nil:
			return
		case refused(err):
			w.stop(fmt.Errorf("gmq: Work: pop from %v: %w", w.topics, err))
			return
		default:
			w.opts.Log.Warn("gmq: pop failed; trying again", "topics", w.topics, "err", err)
			_ = sleep(ctx, w.c.backoff(failures, 0)) // ctx done: the loop ends above
			failures++
		}
	}
}

// refused says whether the broker refused a request for good: a 4xx but
// 408 and 429, which may pass on a retry.
func refused(err error) bool {
	s := status(err)
	return s >= 400 && s < 500 && s != http.StatusRequestTimeout && s != http.StatusTooManyRequests
}

// run handles a job in hand and settles it (ack or fail), and returns the
// next job when the ack popped one. Acks and fails run whether or not ctx
// is done (a stop finishes the jobs in hand); a pop with the ack is asked
// for only while ctx is not done, and never waits, so a stop is not held
// up by it.
func (w *worker) run(ctx context.Context, j *Job) *Job {
	settle := context.WithoutCancel(ctx)
	result, err := w.handle(settle, j)
	log := w.opts.Log.With("id", j.ID, "attempt", j.Attempt)
	switch {
	case errors.Is(err, ErrLostJob):
		log.Warn("gmq: the job's reservation was lost (its TTR ran out): left to whoever has it now", "err", err)
	case errors.Is(err, ErrCancelled):
		log.Info("gmq: the job was cancelled: its handler was stopped; neither acked nor failed", "err", err)
	case err != nil:
		if _, ferr := w.c.FailJob(settle, j, reason(err)); IsCancelled(ferr) {
			log.Info("gmq: the job was cancelled while its handler ran: not failed", "reason", err)
		} else if ferr != nil {
			log.Warn("gmq: could not fail the job: it comes back after its TTR", "reason", err, "err", ferr)
		}
	case ctx.Err() != nil:
		if _, aerr := w.ack(settle, j, result, false, log); IsCancelled(aerr) {
			log.Info("gmq: the job was cancelled while its handler ran: not acked")
		} else if aerr != nil {
			log.Warn("gmq: could not ack the job done: it comes back after its TTR", "err", aerr)
		}
	default:
		next, aerr := w.ack(settle, j, result, true, log)
		if IsCancelled(aerr) {
			log.Info("gmq: the job was cancelled while its handler ran: not acked")
		} else if aerr != nil {
			log.Warn("gmq: could not ack the job done, or pop the next", "err", aerr)
		}
		return next
	}
	return nil
}

// ack acks j done with the handler's result (a Done: with its follow-ups
// too) and, when pop is set and there are no follow-ups, pops the next job
// in the same request (without waiting). A result that cannot be sent
// (encoding/json refuses it) or kept (413: over the topic's max_result;
// the ack did nothing) is logged and dropped: the job was done, and is
// acked without it rather than run again after its TTR. Follow-ups gmq
// refuses (400, or a 413 without the result) fail the job with its reason
// (see Done).
func (w *worker) ack(ctx context.Context, j *Job, result any, pop bool, log *slog.Logger) (*Job, error) {
	d := done(result)
	raw, err := encodeResult(d.Result)
	if err != nil {
		log.Warn("gmq: the handler's result is not JSON: acking the job without it", "err", err)
	}
	for {
		var next *Job
		if pop && len(d.Push) == 0 {
			next, err = w.c.ackAndPop(ctx, deliveryOf(j), raw, w.topics, 0)
		} else {
			_, err = w.c.ack(ctx, deliveryOf(j), raw, d.Push)
		}
		if raw != nil && status(err) == http.StatusRequestEntityTooLarge {
			log.Warn("gmq: the handler's result is too big to keep: acking the job without it", "bytes", len(raw), "err", err)
			raw = nil
			continue
		}
		if len(d.Push) > 0 && refusedFollowUps(err) {
			log.Warn("gmq: the handler's follow-ups were refused: failing the job", "err", err)
			_, err = w.c.FailJob(ctx, j, reason(err))
		}
		return next, err
	}
}

// maxReason bounds the text a failed job keeps: a handler's error may carry
// a whole dump, and the broker refuses a fail of more than 64 KB (the job
// would then come back only after its TTR, its error unsaid).
const maxReason = 4 << 10

// reason is the text a failed job keeps as its last_error.
func reason(err error) string {
	msg := err.Error()
	if msg == "" {
		return fmt.Sprintf("%T with no message", err)
	}
	if len(msg) > maxReason {
		msg = strings.ToValidUTF8(msg[:maxReason], "") + "…"
	}
	return msg
}

// handle runs the handler on j, touching j while it runs, and returns its
// result and error: a recovered panic as one, ErrLostJob (wrapped) when a
// touch found the job lost, ErrCancelled (wrapped) when a touch or the
// handler's Progress found it cancelled.
func (w *worker) handle(ctx context.Context, j *Job) (result any, err error) {
	hctx, lose := context.WithCancelCause(ctx)
	defer lose(nil)
	hctx = context.WithValue(hctx, handlingKey{}, &handling{id: j.ID, attempt: j.Attempt, stop: lose})
	if limit := handlerLimit(w.opts.Timeout, j.Timeout); limit > 0 {
		timer := time.AfterFunc(limit, func() { lose(fmt.Errorf("%w after %s", ErrHandlerTimeout, limit)) })
		defer timer.Stop()
	}
	stopTouching := w.keepAlive(ctx, lose, j)
	defer func() {
		stopTouching()
		if cause := context.Cause(hctx); errors.Is(cause, ErrLostJob) || errors.Is(cause, ErrHandlerTimeout) ||
			errors.Is(cause, ErrCancelled) {
			err = cause
		}
	}()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
			w.opts.Log.Error("gmq: handler panicked", "id", j.ID, "panic", r, "stack", string(debug.Stack()))
		}
	}()
	return w.handler(hctx, j)
}

// handlerLimit is how long a handler may run on a job: the worker's
// timeout or the job's own (seconds), the shorter where both are set (0:
// no limit).
func handlerLimit(worker time.Duration, job float64) time.Duration {
	own := time.Duration(job * float64(time.Second))
	switch {
	case own <= 0:
		return worker
	case worker <= 0:
		return own
	}
	return min(worker, own)
}

// keepAlive touches j every half TTR from now until the returned stop is
// called (stop waits for a touch under way to be given up). A touch that
// finds j gone or no longer this delivery's calls lose with ErrLostJob, one
// that finds it cancelled (410) with ErrCancelled.
func (w *worker) keepAlive(ctx context.Context, lose context.CancelCauseFunc, j *Job) (stop func()) {
	every := time.Duration(j.TTR * float64(time.Second) / 2)
	if every <= 0 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			err := w.c.TouchJob(ctx, j)
			switch {
			case err == nil, ctx.Err() != nil:
			case IsCancelled(err):
				lose(fmt.Errorf("%w: touch: %w", ErrCancelled, err))
				return
			case IsNotFound(err) || IsConflict(err):
				lose(fmt.Errorf("%w: touch: %w", ErrLostJob, err))
				return
			default:
				w.opts.Log.Warn("gmq: touch failed; trying again at the next half TTR", "id", j.ID, "err", err)
			}
		}
	})
	return func() {
		cancel()
		wg.Wait()
	}
}
