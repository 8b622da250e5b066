package dispatcher

import (
	"container/list"
	"sync"
	"time"
)

// waiter is one consumer blocked in a long-poll pop. It is woken at most once
// per registration, with the topic that has a job for it.
type waiter struct {
	topics []string
	wake   chan string              // capacity 1
	elems  map[string]*list.Element // its place in each topic's queue while registered
}

func newWaiter(topics []string) *waiter {
	return &waiter{topics: topics, wake: make(chan string, 1)}
}

// waitList holds the waiting consumers of this broker, in arrival order per
// topic, so a ready job wakes one consumer (the one waiting longest), not all.
type waitList struct {
	mu       sync.Mutex
	byTopic  map[string]*list.List
	count    int
	openings map[string]*opening // see notifyAfter
}

// opening is a timer that wakes one consumer waiting on a topic when the
// topic opens: at a pause's end, or its rate's next token.
type opening struct {
	at    time.Time
	timer *time.Timer
}

func newWaitList() *waitList {
	return &waitList{byTopic: make(map[string]*list.List), openings: make(map[string]*opening)}
}

// stopOpenings stops every opening timer (the dispatcher's Run, as it
// ends): none fires into a dispatcher that has stopped.
func (l *waitList) stopOpenings() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for topic, o := range l.openings {
		o.timer.Stop()
		delete(l.openings, topic)
	}
}

// notifyAfter wakes one consumer waiting on topic after d: when a pause
// ends or a rate gives its next token (a pop's PauseWait). It keeps one
// timer a topic on this broker, however many of its consumers wait, so they
// do not each ask Redis again at every token: the one woken either takes a
// job (and, the topic holding more, wakes the next) or learns the next
// opening and sets the timer again.
func (l *waitList) notifyAfter(topic string, d time.Duration) {
	at := time.Now().Add(d)
	l.mu.Lock()
	defer l.mu.Unlock()
	if o := l.openings[topic]; o != nil {
		if !o.at.After(at) {
			return // it fires first
		}
		o.timer.Stop() // a wake it already began is one more look, no harm
	}
	o := &opening{at: at}
	o.timer = time.AfterFunc(d, func() {
		l.mu.Lock()
		if l.openings[topic] == o {
			delete(l.openings, topic)
		}
		l.mu.Unlock()
		l.notify(topic, 1)
	})
	l.openings[topic] = o
}

// add registers w on each of its topics; a registered waiter stays as it is.
// A waiter registered again may have a wake-up it did not read (its wait
// ended by its timer as the wake-up came): add takes it out and returns its
// topic ("" for none), for the caller's next look to act on. Left in, it
// filled the channel, and the next notify blocked on it holding l.mu, which
// every pop, push and wake-up of the broker then waited for.
func (l *waitList) add(w *waiter) (pending string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if w.elems != nil {
		return ""
	}
	select { // under l.mu: no notify sends to w until it is registered below
	case pending = <-w.wake:
	default:
	}
	w.elems = make(map[string]*list.Element, len(w.topics))
	for _, t := range w.topics {
		q := l.byTopic[t]
		if q == nil {
			q = list.New()
			l.byTopic[t] = q
		}
		w.elems[t] = q.PushBack(w)
	}
	l.count++
	return pending
}

// remove takes w off every queue. It reports the topic of a wake-up w was sent
// but did not act on, so the caller can pass it on.
func (l *waitList) remove(w *waiter) (unused string) {
	l.mu.Lock()
	l.unlink(w)
	l.mu.Unlock()
	select {
	case t := <-w.wake:
		return t
	default:
		return ""
	}
}

func (l *waitList) unlink(w *waiter) {
	if w.elems == nil {
		return
	}
	for t, e := range w.elems {
		q := l.byTopic[t]
		q.Remove(e)
		if q.Len() == 0 {
			delete(l.byTopic, t)
		}
	}
	w.elems = nil
	l.count--
}

// notify wakes up to n consumers waiting on topic, longest waiting first.
func (l *waitList) notify(topic string, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for ; n > 0; n-- {
		q := l.byTopic[topic]
		if q == nil {
			return
		}
		w := q.Front().Value.(*waiter)
		l.unlink(w)
		w.wake <- topic // cannot block: a waiter is woken once per registration
	}
}

// notifyAll wakes every waiting consumer to look again, after wake-ups may
// have been missed (the pub/sub connection was down).
func (l *waitList) notifyAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for topic, q := range l.byTopic {
		for q.Len() > 0 {
			w := q.Front().Value.(*waiter)
			l.unlink(w)
			w.wake <- topic
		}
	}
}

// topics lists the topics that have waiting consumers.
func (l *waitList) topics() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, 0, len(l.byTopic))
	for t := range l.byTopic {
		out = append(out, t)
	}
	return out
}

// len is the number of waiting consumers.
func (l *waitList) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.count
}

// on is the number of consumers waiting on topic.
func (l *waitList) on(topic string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if q := l.byTopic[topic]; q != nil {
		return q.Len()
	}
	return 0
}

// onOthers is the number of consumers waiting on topics other than the given
// ones, each counted once per topic it waits on (as on counts them). It
// looks only at the topics that have waiting consumers.
func (l *waitList) onOthers(topics []string) int {
	skip := make(map[string]bool, len(topics))
	for _, t := range topics {
		skip[t] = true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for t, q := range l.byTopic {
		if !skip[t] {
			n += q.Len()
		}
	}
	return n
}
