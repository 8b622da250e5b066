// Package webhook is HTTP push delivery (docs/workflows.md): for each topic
// with deliver_to, every broker pops the topic's jobs as a consumer would
// and POSTs each to that URL, signed in the Standard Webhooks form, then
// acks, releases or fails the job by the answer. There is no leader: the
// brokers compete for the jobs as consumers do, and the topic's own
// max_reserved (counted in Redis, across brokers) bounds the requests open
// at once everywhere, as its pause, rate and groups bound its pops. Only
// the hosts conf.ini's [webhook] allow_hosts lists are called, and that is
// checked again on each address dialled (internal/egress).
package webhook

import (
	"context"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/gmq/gmq/dispatcher"
	"github.com/gmq/gmq/internal/egress"
	"github.com/gmq/gmq/job"
)

// Options tune a broker's deliveries.
type Options struct {
	// Policy is [webhook] allow_hosts: off (nil or empty), no topic is
	// delivered by this broker.
	Policy *egress.Policy
	// MaxInFlight is how many requests one topic has open at once on this
	// broker ([webhook] max_in_flight); max_reserved bounds all brokers.
	MaxInFlight int
	// MaxAnswer is how many bytes of an answer are read ([webhook]
	// max_answer): a 2xx answer's body becomes the job's result.
	MaxAnswer int
	// Scan is how often the broker looks for topics that deliver.
	Scan time.Duration
	// Grace is how long, once Run's ctx ends, the requests open may
	// finish ([server] shutdown_timeout); those still open are then cut
	// and their jobs given back.
	Grace time.Duration
	// Version names the broker in each request's User-Agent.
	Version string
	// Observe records each delivery's outcome and time (the metrics); nil:
	// none.
	Observe func(topic, outcome string, took time.Duration)
	// Opened counts a request opened (+1) or ended (-1); nil: none.
	Opened func(topic string, n int)
	// Now is the clock of the signatures' timestamps (nil: time.Now).
	Now func() time.Time
	Log *slog.Logger
}

// The outcomes of a delivery, as Observe and Stats count them.
const (
	Acked    = "acked"    // a 2xx answer: the job acked
	Released = "released" // 429 or 503 with Retry-After: released for that long
	Failed   = "failed"   // any other answer, no answer in time, or no connection: failed
)

// Deliverer runs a broker's deliveries. Build it with New, run it with Run.
type Deliverer struct {
	d      *dispatcher.Dispatcher
	opts   Options
	log    *slog.Logger
	client *http.Client

	mu      sync.Mutex
	running map[string]*topicLoop
	// slots are each topic's requests open, max_in_flight at most: kept
	// across its loops, so that a loop started again (deliver_to removed
	// and set again) counts the requests the one before left open.
	slots   map[string]chan struct{}
	stats   map[string]*job.WebhookStats
	refused map[string]string // topic -> a deliver_to this broker's policy refused (logged once)
}

// New builds the deliverer of a broker over d.
func New(d *dispatcher.Dispatcher, opts Options) *Deliverer {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxInFlight < 1 {
		opts.MaxInFlight = 1
	}
	if opts.Scan <= 0 {
		opts.Scan = time.Second
	}
	return &Deliverer{d: d, opts: opts, log: opts.Log, client: newClient(opts.Policy, opts.MaxInFlight),
		running: map[string]*topicLoop{}, slots: map[string]chan struct{}{}, stats: map[string]*job.WebhookStats{}, refused: map[string]string{}}
}

// maxAnswerHeaders bounds an answer's headers (Go's default is 10 MB a
// response: times max_in_flight, times the topics, held for as long as
// deliver_timeout).
const maxAnswerHeaders = 64 << 10

// newClient is the HTTP client of every delivery: it dials only what the
// policy allows, through no proxy (a proxy would dial for it, unchecked),
// and follows no redirect (a redirect's target was never checked: its
// 3xx is an answer like any other, and fails the job).
func newClient(policy *egress.Policy, perHost int) *http.Client {
	if policy == nil {
		policy = &egress.Policy{}
	}
	dialer := policy.Dialer()
	dialer.Timeout = 10 * time.Second
	return &http.Client{
		Transport: &http.Transport{Proxy: nil, DialContext: dialer.DialContext, MaxIdleConnsPerHost: perHost,
			IdleConnTimeout: 90 * time.Second, TLSHandshakeTimeout: 10 * time.Second, ForceAttemptHTTP2: true,
			MaxResponseHeaderBytes: maxAnswerHeaders},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Run delivers until ctx ends: every Scan it asks which topics deliver and
// starts or stops their loops; then it lets the requests open finish
// within Grace and returns once every loop has ended.
func (x *Deliverer) Run(ctx context.Context) {
	if x.opts.Policy.Off() {
		return // delivery is off: no topic can have a deliver_to this broker would call
	}
	hard, cut := context.WithCancel(context.WithoutCancel(ctx))
	defer cut()
	var wg sync.WaitGroup
	t := time.NewTicker(x.opts.Scan)
	defer t.Stop()
	for {
		x.scan(ctx, hard, &wg)
		select {
		case <-t.C:
			continue
		case <-ctx.Done():
		}
		break
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(x.opts.Grace):
		x.log.Warn("deliveries still open at the end of the shutdown grace: cut, their jobs given back")
		cut()
		<-done
	}
}

// scan starts a loop for each topic that delivers and has none, passes
// each running loop its settings as they are now, and stops the loops of
// topics that no longer deliver (their requests open finish).
func (x *Deliverer) scan(ctx, hard context.Context, wg *sync.WaitGroup) {
	topics, err := x.d.WebhookTopics(ctx)
	if err != nil {
		if ctx.Err() == nil {
			x.log.Debug("look for the topics that deliver over HTTP", "err", err)
		}
		return // the loops running keep their settings until a scan succeeds
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	seen := map[string]bool{}
	for _, t := range topics {
		if err := x.opts.Policy.CheckURL(t.Settings[job.DeliverTo]); err != nil {
			if x.refused[t.Topic] != t.Settings[job.DeliverTo] {
				x.refused[t.Topic] = t.Settings[job.DeliverTo]
				x.log.Warn("this broker does not deliver a topic: its deliver_to is not allowed here", "topic", t.Topic, "err", err)
			}
			continue
		}
		delete(x.refused, t.Topic)
		seen[t.Topic] = true
		if l := x.running[t.Topic]; l != nil {
			if was := (*l.settings.Load())[job.DeliverTo]; was != t.Settings[job.DeliverTo] {
				x.log.Info("a topic's deliver_to changed", "topic", t.Topic, "to", t.Settings[job.DeliverTo], "was", was)
			}
			l.settings.Store(&t.Settings)
			continue
		}
		if x.slots[t.Topic] == nil {
			x.slots[t.Topic] = make(chan struct{}, x.opts.MaxInFlight)
		}
		l := x.newLoop(ctx, t, x.slots[t.Topic])
		x.running[t.Topic] = l
		if x.stats[t.Topic] == nil {
			x.stats[t.Topic] = &job.WebhookStats{}
		}
		x.log.Info("delivering a topic's jobs over HTTP", "topic", t.Topic, "to", t.Settings[job.DeliverTo])
		wg.Go(func() { x.runLoop(l, hard) })
	}
	for name, l := range x.running {
		if !seen[name] {
			x.log.Info("no longer delivering a topic's jobs over HTTP", "topic", name)
			l.stop()
			delete(x.running, name)
		}
	}
}

// Stats are this broker's deliveries of a topic since it started, and
// whether it has delivered the topic at all.
func (x *Deliverer) Stats(topic string) (job.WebhookStats, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	s, ok := x.stats[topic]
	if !ok {
		return job.WebhookStats{}, false
	}
	return *s, true
}

// Running are the topics this broker delivers now, by name.
func (x *Deliverer) Running() []string {
	x.mu.Lock()
	defer x.mu.Unlock()
	return slices.Sorted(maps.Keys(x.running))
}

// count records one delivery's outcome.
func (x *Deliverer) count(topic, outcome string, took time.Duration, lastError string) {
	x.mu.Lock()
	s := x.stats[topic]
	if s == nil {
		s = &job.WebhookStats{}
		x.stats[topic] = s
	}
	s.Sent++
	s.Time += took
	switch outcome {
	case Acked:
		s.Acked++
	case Released:
		s.Released++
	default:
		s.Failed++
	}
	if lastError != "" {
		s.LastError, s.LastErrorAt = lastError, x.opts.Now()
	}
	x.mu.Unlock()
	if x.opts.Observe != nil {
		x.opts.Observe(topic, outcome, took)
	}
}

// open counts a request opened (+1) or ended (-1).
func (x *Deliverer) open(topic string, n int) {
	x.mu.Lock()
	if s := x.stats[topic]; s != nil {
		s.InFlight += n
	}
	x.mu.Unlock()
	if x.opts.Opened != nil {
		x.opts.Opened(topic, n)
	}
}
