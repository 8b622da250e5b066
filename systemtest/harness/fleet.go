package harness

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// RetryWhileDown repeats call (until it says done) while the broker or
// Redis is down, for at most a minute, and not once the test has failed or
// is ending (ending).
func RetryWhileDown(t *testing.T, call func() (done bool)) {
	ctx := Ending(t)
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); {
		if ctx.Err() != nil || call() {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Error("gave up retrying after 60s")
}

// endings holds ending's context for each test that asked.
var endings sync.Map // *testing.T -> context.Context

// Ending is a context cancelled once t has failed or is ending. A chaos
// test's loops (its producers, consumers and retries) stop with it: after a
// Fatalf the deferred stop waits for the consumers, and a consumer retrying
// each of 50 calls for a minute against brokers that had died held make
// test for its whole 25 minutes (issue 49). t.Context alone ends only after
// the test function (and so that wait) returns.
func Ending(t *testing.T) context.Context {
	if ctx, ok := endings.Load(t); ok {
		return ctx.(context.Context)
	}
	ctx, cancel := context.WithCancel(t.Context())
	if prev, loaded := endings.LoadOrStore(t, ctx); loaded {
		cancel()
		return prev.(context.Context)
	}
	t.Cleanup(func() { cancel(); endings.Delete(t) })
	go func() { // ends with the test
		for !t.Failed() {
			select {
			case <-ctx.Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
		cancel()
	}()
	return ctx
}

// Consume runs n consumers, each calling round again and again, until the
// returned stop is called or t has failed (ending). stop waits for them,
// and may be called again (deferred as well, so that no consumer outlives
// its test).
func Consume(t *testing.T, n int, round func()) (stop func()) {
	ctx := Ending(t)
	quit := make(chan struct{})
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for {
				select {
				case <-quit:
					return
				case <-ctx.Done():
					return
				default:
				}
				round()
			}
		})
	}
	var once sync.Once
	return func() {
		once.Do(func() { close(quit) })
		wg.Wait()
	}
}

// InTurn makes requests to brokers in turn, each retried on the next while
// it is down, and each cut off after limit (DoWithin).
type InTurn struct {
	T       *testing.T
	Brokers []*BrokerProc
	Limit   time.Duration
	turn    atomic.Int64
	downs   atomic.Int64
}

func (f *InTurn) Pick() *BrokerProc { return f.Brokers[f.turn.Add(1)%int64(len(f.Brokers))] }

// IsDown says an answer is a broker's or Redis's absence, worth a retry.
func IsDown(a Answer, err error) bool { return err != nil || a.Code == 503 || a.Code == 502 }

// Call makes one request, retried on another broker while it is down (a
// few of the down answers logged).
func (f *InTurn) Call(method, path, body string) Answer {
	var got Answer
	RetryWhileDown(f.T, func() bool {
		b := f.Pick()
		a, err := DoWithin(f.T, b, f.Limit, method, path, body)
		got = a
		if IsDown(a, err) && f.downs.Add(1)%50 == 1 {
			f.T.Logf("%s %s on %s: %d %v %v", method, path, b.Addr, a.Code, a.Body, err)
		}
		return !IsDown(a, err)
	})
	return got
}

// DoWithin is b.do cut off after limit; a request a live broker has not
// answered by then is a hang worth seeing, so the broker is sent SIGQUIT
// (its goroutines go to its log) and the test fails, showing its log. So
// limit must be well past what a live broker may take on a loaded machine:
// its [server] request_timeout (5 s) plus the request's own wait (a pop's
// timeout). A 5 s limit once took slow answers for hangs and killed both
// brokers of a test (issue 49). The request ends at once when the test has
// failed or is ending (ending).
func DoWithin(t *testing.T, b *BrokerProc, limit time.Duration, method, path, body string) (Answer, error) {
	type result struct {
		a   Answer
		err error
	}
	ctx := Ending(t)
	done := make(chan result, 1)
	go func() { a, err := b.DoContext(ctx, method, path, body); done <- result{a, err} }()
	select {
	case r := <-done:
		return r.a, r.err
	case <-time.After(limit):
	}
	b.Quit()
	r := <-done
	time.Sleep(time.Second)
	t.Errorf("%s %s on %s: no answer in %v (then %d %v); its log:\n%s", method, path, b.Addr, limit, r.a.Code, r.err, b.Log)
	return r.a, r.err
}
