package dispatcher

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/gmq/gmq/job"
)

// End is how a job ended, as a wait for it learns it: Job when the job is
// kept (completed, with its result; dead, with its last error; cancelled),
// and How ("completed", "dead", "cancelled", or, for a job not kept,
// "acked", "deleted",
// "expired", "taken" (a pop with a TTR of 0), "discarded", or "gone" when
// only its absence tells).
type End struct {
	Job *job.Job
	How string
}

// endWaits are the requests of this broker waiting for jobs' ends, by job
// number: an announcement (lib.lua announce_end, heard by listen) wakes
// every one waiting for that job. They count in max_waiting with the
// waiting pops, and hold no Redis connection.
type endWaits struct {
	mu    sync.Mutex
	byJob map[uint64]map[chan string]struct{}
	count int
	// listening counts the waits past their first look at their job,
	// which the stats show (current_end_waits): count includes waits still
	// on their way there, and a cancel sent once the stats counted such a
	// wait could come before its look, which then found no job (a test
	// that did so failed under load).
	listening int
}

func newEndWaits() *endWaits { return &endWaits{byJob: make(map[uint64]map[chan string]struct{})} }

// reserve takes a place for a wait, counted at once (so a burst cannot
// pass max_waiting between its check and the wait's Redis calls), unless
// the broker's waiting requests (others, and these) are at most already.
func (e *endWaits) reserve(others, most int) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if most > 0 && others+e.count >= most {
		return false
	}
	e.count++
	return true
}

// release gives back a place reserve took.
func (e *endWaits) release() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.count--
}

// add registers a wait for job n, in a place reserve took.
func (e *endWaits) add(n uint64, ch chan string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	set := e.byJob[n]
	if set == nil {
		set = make(map[chan string]struct{})
		e.byJob[n] = set
	}
	set[ch] = struct{}{}
}

func (e *endWaits) remove(n uint64, ch chan string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if set := e.byJob[n]; set != nil {
		delete(set, ch)
		if len(set) == 0 {
			delete(e.byJob, n)
		}
	}
}

// ended tells every wait for job n how it ended.
func (e *endWaits) ended(n uint64, how string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for ch := range e.byJob[n] {
		select {
		case ch <- how:
		default: // told already
		}
	}
}

// lookAgain tells every wait to read its job again: announcements may have
// been missed while the subscription was down.
func (e *endWaits) lookAgain() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, set := range e.byJob {
		for ch := range set {
			select {
			case ch <- "":
			default:
			}
		}
	}
}

func (e *endWaits) len() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.count
}

// listen counts a wait in (1) or out (-1) of listening.
func (e *endWaits) listen(n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.listening += n
}

// listeners is how many waits are listening for their jobs' ends.
func (e *endWaits) listeners() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.listening
}

// WaitRoom says whether a wait would be let in now (job.ErrTooManyWaiting
// when max_waiting is reached): a push that waits asks before it stores
// its job, so that its refusal stores nothing.
func (d *Dispatcher) WaitRoom() error {
	if n := d.waiters.len() + d.ends.len() + d.events.count(); d.opts.MaxWaiting > 0 && n >= d.opts.MaxWaiting {
		return fmt.Errorf("%w: %d are waiting, the limit is %d ([jobs] max_waiting)", job.ErrTooManyWaiting, n, d.opts.MaxWaiting)
	}
	return nil
}

// WaitEnd waits up to timeout (capped by MaxPopTimeout) for job id to end
// and says how (End); nil, nil when it has not ended by then. A job that
// has ended already (completed, dead) is answered at once. pushed says the
// caller knows the job existed (it pushed it): a job not found then has
// ended and was not kept ("gone"), where otherwise it is job.ErrNotFound.
// A wait counts in max_waiting, as a waiting pop does; with max_waiting
// reached it is job.ErrTooManyWaiting, but for a push's wait (pushed),
// which asked for room before it stored its job (WaitRoom): its job is
// stored, so it is answered as a wait that saw no end (nil, nil).
func (d *Dispatcher) WaitEnd(ctx context.Context, id string, timeout time.Duration, pushed bool) (*End, error) {
	if err := d.allow("wait", reading); err != nil {
		return nil, err
	}
	if !d.ends.reserve(d.waiters.len()+d.events.count(), d.opts.MaxWaiting) {
		if pushed {
			return nil, nil
		}
		return nil, fmt.Errorf("%w: %d are waiting, the limit is %d ([jobs] max_waiting)", job.ErrTooManyWaiting,
			d.waiters.len()+d.ends.len()+d.events.count(), d.opts.MaxWaiting)
	}
	defer d.ends.release()
	timeout = min(timeout, d.opts.MaxPopTimeout)
	n, err := d.pool.Resolve(ctx, id)
	if err != nil {
		return gone(err, pushed)
	}
	// Listen before marking, so that an end announced in between is heard.
	ch := make(chan string, 1)
	d.ends.add(n, ch)
	defer d.ends.remove(n, ch)
	j, err := d.pool.MarkEndWait(ctx, n)
	if err != nil {
		return gone(err, pushed)
	}
	if end := endOf(j); end != nil {
		return end, nil
	}
	d.ends.listen(1)
	defer d.ends.listen(-1)
	id = strconv.FormatUint(n, 10) // looked at again by number: no second resolve of a client id
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case how := <-ch:
			if how != "" && how != "completed" && how != "dead" && how != "cancelled" {
				return &End{How: how}, nil // not kept: the announcement says all there is
			}
			end, err := d.lookAt(ctx, id)
			if end != nil && end.How == "gone" && how != "" {
				end.How = how // it ended so, and nothing keeps it
			}
			if end != nil || err != nil {
				return end, err
			}
		case <-timer.C:
			// A last look: an end announced while the subscription was
			// down is not missed.
			return d.lookAt(ctx, id)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// lookAt reads job id and says whether it has ended (nil: not yet).
func (d *Dispatcher) lookAt(ctx context.Context, id string) (*End, error) {
	j, err := d.pool.Peek(ctx, id)
	if err != nil {
		return gone(err, true)
	}
	return endOf(j), nil
}

// endOf is the end of a job that has ended (dead, completed, cancelled),
// else nil.
func endOf(j *job.Job) *End {
	if j.State.Ended() {
		return &End{Job: j, How: j.State.String()}
	}
	return nil
}

// gone turns a job not found into its end ("gone") when it existed.
func gone(err error, existed bool) (*End, error) {
	if existed && errors.Is(err, job.ErrNotFound) {
		return &End{How: "gone"}, nil
	}
	return nil, err
}
