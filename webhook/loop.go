package webhook

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gmq/gmq/dispatcher"
	"github.com/gmq/gmq/job"
)

// popWait is how long one pop of a loop waits for a job: a long poll, so
// an idle topic costs a pop every popWait, and a job pushed is delivered at
// once (the pop is woken).
const popWait = 5 * time.Second

// topicLoop is one topic's deliveries on this broker: a pop for as many
// jobs as it has free requests, each job's request on a goroutine of its
// own, at most MaxInFlight at once.
type topicLoop struct {
	topic    string
	settings atomic.Pointer[job.TopicConfig] // the topic's effective settings, as the last scan read them
	ctx      context.Context                 // ends when the topic stops delivering or the broker stops
	stop     context.CancelFunc
	slots    chan struct{} // the topic's requests open (Deliverer.slots)
}

func (x *Deliverer) newLoop(ctx context.Context, t dispatcher.WebhookTopic, slots chan struct{}) *topicLoop {
	lctx, stop := context.WithCancel(ctx)
	l := &topicLoop{topic: t.Topic, ctx: lctx, stop: stop, slots: slots}
	l.settings.Store(&t.Settings)
	return l
}

// runLoop pops and delivers until the loop's ctx ends, then waits for its
// requests; hard, when it ends, cuts them (the shutdown grace is over).
// A pop that fails (Redis down, the server status refusing pops) is tried
// again after a pause that doubles from 100 ms to 5 s.
func (x *Deliverer) runLoop(l *topicLoop, hard context.Context) {
	slots := l.slots
	var requests sync.WaitGroup
	defer requests.Wait()
	pause := time.Duration(0)
	for l.ctx.Err() == nil {
		select { // one free request at least
		case slots <- struct{}{}:
		case <-l.ctx.Done():
			return
		}
		n := 1
		for n < cap(slots) { // and every other one free now
			select {
			case slots <- struct{}{}:
				n++
				continue
			default:
			}
			break
		}
		jobs, err := x.d.Pop(l.ctx, dispatcher.PopParams{Topics: []string{l.topic}, Timeout: popWait, Count: n})
		popped := time.Now() // the TTRs began a round trip before at most
		for range n - len(jobs) {
			<-slots
		}
		for _, j := range jobs {
			requests.Go(func() {
				defer func() { <-slots }()
				for at := popped; j != nil; {
					j, at = x.deliver(hard, l, j, at)
				}
			})
		}
		if err != nil && l.ctx.Err() == nil {
			pause = min(max(2*pause, 100*time.Millisecond), 5*time.Second)
			if !errors.Is(err, job.ErrRefused) {
				x.log.Debug("pop a topic's jobs to deliver", "topic", l.topic, "err", err, "again_in", pause)
			}
			select {
			case <-time.After(pause):
			case <-l.ctx.Done():
			}
			continue
		}
		pause = 0
	}
}
