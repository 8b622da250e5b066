// Package metrics serves a broker's Prometheus metrics: the jobs of each
// topic by state and their event totals (read from Redis, so every broker
// sharing it reports the same numbers: scrape one, or take max, not sum),
// this broker's waiting consumers, connections, request durations and
// batch sizes, Redis's round trip, and the Go process collectors. It owns
// the registry (one per broker, no global), the cache that keeps a scrape
// from reading Redis more than once per interval, and the cap on per-topic
// series: topics past MaxTopics (by name) are summed under topic="_other".
package metrics

import (
	"context"
	"net/http"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gmq/gmq/dispatcher"
	"github.com/gmq/gmq/job"
)

// Other is the topic label the topics past MaxTopics are summed under.
const Other = "_other"

// Options tune the metrics.
type Options struct {
	// MaxTopics is how many topics (the first by name) get series of their
	// own; the rest are summed under topic="_other".
	MaxTopics int
	// CacheFor is how long one read of Redis serves scrapes (a scrape
	// interval): several Prometheus servers, or a fast one, cost one read.
	CacheFor time.Duration
	// Connections counts each front end's clients now.
	Connections func() map[string]int
	// Version is the broker's, for gmq_build_info.
	Version string
}

// Metrics is a broker's registry and its collectors.
type Metrics struct {
	registry *prometheus.Registry
	requests *prometheus.HistogramVec
	// deliveries are this broker's HTTP deliveries (package webhook), by
	// topic (the first MaxTopics topics delivered; the rest "_other").
	deliveries *prometheus.HistogramVec
	inFlight   *prometheus.GaugeVec
	delivering topicLabels
}

// New builds the metrics of a broker over d.
func New(d *dispatcher.Dispatcher, opts Options) *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{registry: reg, requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "gmq_request_duration_seconds", Help: "How long requests took, by front end, operation and outcome (code: HTTP's status; ok, client_error or server_error on beanstalkd and kestrel; ok or error on JSON-RPC).",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	}, []string{"front_end", "op", "code"})}
	batches := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "gmq_batch_operations", Help: "Pushes, pops and acks carried by each batched script call of this broker.",
		Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128},
	})
	d.Store().ObserveBatches(func(ops int) { batches.Observe(float64(ops)) })
	// Not cached with the store's series: an alert on it should not wait.
	lost := prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "gmq_store_data_lost_total",
		Help: "Times this broker saw Redis lose gmq's data (its meta record gone or made anew): the jobs it held are gone.",
	}, func() float64 { n, _ := d.StoreLosses(); return float64(n) })
	format := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "gmq_store_format", Help: "The store's format, as this broker last read it (docs/operations.md, \"Upgrades\").",
	}, func() float64 { f, _, _ := d.Migration(); return float64(f) })
	migrated := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "gmq_store_migrated", Help: "1 when the store's migration to its format is over, 0 while it runs.",
	}, func() float64 {
		if _, done, _ := d.Migration(); done {
			return 1
		}
		return 0
	})
	moved := prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "gmq_store_bodies_migrated_total", Help: "Bodies this broker moved into their records for store format 2.",
	}, func() float64 { _, _, n := d.Migration(); return float64(n) })
	build := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "gmq_build_info", Help: "Always 1: the broker's version, the commit it was built from and its Go, as labels.",
		ConstLabels: prometheus.Labels{"version": opts.Version, "revision": revision(), "goversion": runtime.Version()},
	})
	build.Set(1)
	m.deliveries = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "gmq_delivery_duration_seconds", Help: "This broker's HTTP push deliveries, by topic and outcome (acked, released, failed): how long each request took; its count is the deliveries made.",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
	}, []string{"topic", "outcome"})
	m.inFlight = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "gmq_deliveries_in_flight", Help: "This broker's HTTP push deliveries open now, by topic.",
	}, []string{"topic"})
	m.delivering = topicLabels{most: opts.MaxTopics, named: map[string]bool{}}
	reg.MustRegister(m.requests, m.deliveries, m.inFlight, batches, lost, format, migrated, moved, build, statusCollector{d}, &store{d: d, opts: opts},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// revision is the commit the binary was built from ("" when unknown: a
// build outside a git checkout), with "+dirty" for uncommitted changes.
func revision() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev, dirty string
	for _, s := range info.Settings {
		switch {
		case s.Key == "vcs.revision":
			rev = s.Value
		case s.Key == "vcs.modified" && s.Value == "true":
			dirty = "+dirty"
		}
	}
	if rev == "" {
		return ""
	}
	return rev + dirty
}

// Handler serves the metrics in Prometheus's text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// ObserveRequest records how long a front end took for one operation and
// how it ended (code). A nil *Metrics observes nothing, so front ends need
// not check.
func (m *Metrics) ObserveRequest(frontEnd, op, code string, took time.Duration) {
	if m == nil {
		return
	}
	m.requests.WithLabelValues(frontEnd, op, code).Observe(took.Seconds())
}

// ObserveDelivery records one HTTP delivery of topic: its outcome and
// how long its request took. A nil *Metrics observes nothing.
func (m *Metrics) ObserveDelivery(topic, outcome string, took time.Duration) {
	if m == nil {
		return
	}
	m.deliveries.WithLabelValues(m.delivering.of(topic), outcome).Observe(took.Seconds())
}

// DeliveryOpen counts a delivery's request opened (+1) or ended (-1).
func (m *Metrics) DeliveryOpen(topic string, n int) {
	if m == nil {
		return
	}
	m.inFlight.WithLabelValues(m.delivering.of(topic)).Add(float64(n))
}

// topicLabels caps the topics that get series of their own: the first
// most seen (deliveries are observed as they happen, so "first by name"
// cannot be known), the rest under Other.
type topicLabels struct {
	most  int
	mu    sync.Mutex
	named map[string]bool
}

func (l *topicLabels) of(topic string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.named[topic] {
		return topic
	}
	if len(l.named) < l.most {
		l.named[topic] = true
		return topic
	}
	return Other
}

// store collects what is read from Redis (and this broker's waiters and
// connections) at scrape time, cached for CacheFor.
type store struct {
	d    *dispatcher.Dispatcher
	opts Options

	mu     sync.Mutex
	at     time.Time
	cached []prometheus.Metric
}

var (
	jobsDesc = prometheus.NewDesc("gmq_topic_jobs", "Jobs of a topic now, by state (every broker on the Redis reports the same).",
		[]string{"topic", "state"}, nil)
	jobEventsDesc = prometheus.NewDesc("gmq_jobs_total", "Job events of a topic since it came to be (pushed, reserved, deleted, failed, dead, expired, discarded, completed, cancelled).",
		[]string{"topic", "event"}, nil)
	eventsDesc = prometheus.NewDesc("gmq_events_total", "Server-wide job events kept per bucket, not per topic.",
		[]string{"event"}, nil)
	waitingDesc = prometheus.NewDesc("gmq_waiting_consumers", "Consumers of this broker waiting in a long poll on a topic.",
		[]string{"topic"}, nil)
	ageDesc = prometheus.NewDesc("gmq_oldest_ready_age_seconds", "How long the next ready job of a topic has waited: its queue latency.",
		[]string{"topic"}, nil)
	tokensDesc = prometheus.NewDesc("gmq_topic_tokens", "Whole tokens a topic's rate has now (topics with a rate).",
		[]string{"topic"}, nil)
	maxReservedDesc = prometheus.NewDesc("gmq_topic_max_reserved", "A topic's max_reserved, the most of its jobs reserved at once (topics with one); gmq_topic_jobs{state=\"reserved\"} is the count against it.",
		[]string{"topic"}, nil)
	limitedDesc = prometheus.NewDesc("gmq_topic_limited_total", "Looks of pops that found a topic's ready jobs held back by its rate or max_reserved (topics with a limit; a waiting consumer's each look counts).",
		[]string{"topic"}, nil)
	limitedTimeDesc = prometheus.NewDesc("gmq_topic_limited_seconds_total", "Time consumers' pops spent held back by a topic's rate or max_reserved (topics with a limit).",
		[]string{"topic"}, nil)
	scheduleFiresDesc = prometheus.NewDesc("gmq_schedule_fires_total", "Fires of a cron schedule, by what each did: pushed a job, skipped (overlap skip), or refused by its topic (full, too big).",
		[]string{"schedule", "outcome"}, nil)
	scheduleLateDesc = prometheus.NewDesc("gmq_schedule_lateness_seconds_total", "The sum of a schedule's fires' lateness (Redis's clock): divided by its fires, how late a fire comes.",
		[]string{"schedule"}, nil)
	topicsDesc      = prometheus.NewDesc("gmq_topics", "Topics known now.", nil, nil)
	followUpsDesc   = prometheus.NewDesc("gmq_followups_pending", "Follow-ups kept and not yet pushed: those a broker is pushing, and those their topic refused for now (docs/workflows.md).", nil, nil)
	rttDesc         = prometheus.NewDesc("gmq_redis_rtt_seconds", "One round trip to Redis, measured at the scrape.", nil, nil)
	connectionsDesc = prometheus.NewDesc("gmq_connections", "Clients of this broker connected now, by front end.", []string{"front_end"}, nil)
	upDesc          = prometheus.NewDesc("gmq_store_up", "1 when the scrape could read Redis, else 0 (the other series are then missing).", nil, nil)
)

// Describe sends nothing: the store's series depend on the topics, so it
// is an unchecked collector.
func (s *store) Describe(chan<- *prometheus.Desc) {}

func (s *store) Collect(ch chan<- prometheus.Metric) {
	for _, m := range s.read() {
		ch <- m
	}
}

// read returns the cached metrics, or reads them afresh once CacheFor has passed.
func (s *store) read() []prometheus.Metric {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cached != nil && time.Since(s.at) < s.opts.CacheFor {
		return s.cached
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []prometheus.Metric
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		out = append(out, prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...))
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		out = append(out, prometheus.MustNewConstMetric(d, prometheus.CounterValue, max(v, 0), labels...))
	}
	if s.opts.Connections != nil {
		for fe, n := range s.opts.Connections() {
			gauge(connectionsDesc, float64(n), fe)
		}
	}
	if err := s.readStore(ctx, gauge, counter); err != nil {
		gauge(upDesc, 0)
	} else {
		gauge(upDesc, 1)
	}
	s.cached, s.at = out, time.Now()
	return out
}

type emit func(d *prometheus.Desc, v float64, labels ...string)

func (s *store) readStore(ctx context.Context, gauge, counter emit) error {
	st, err := s.d.Stats(ctx)
	if err != nil {
		return err
	}
	// The first max_topics topics: a page of the topic index, read a
	// bucket's topics per script call (200,000 names took 130 ms to list and
	// sort, a thousand script calls 40 ms of Redis's time).
	listed, total, err := s.d.Topics(ctx, 0, s.opts.MaxTopics)
	if err != nil {
		return err
	}
	if info, err := s.d.Store().Info(ctx); err == nil {
		gauge(rttDesc, info.RTT.Seconds())
	}
	gauge(topicsDesc, float64(total))
	gauge(followUpsDesc, float64(st.FollowUps))
	if schedules, err := s.d.Schedules().List(ctx); err == nil {
		s.schedules(schedules, counter)
	}
	for event, v := range map[string]int64{"timed_out": st.Timeouts, "released": st.Releases, "buried": st.Buries,
		"kicked": st.Kicks, "touched": st.Touches, "flushed": st.Flushed, "queue_created": st.QueueCreates,
		"queue_deleted": st.QueueDeletes, "queue_expired": st.QueueExpires} {
		counter(eventsDesc, float64(v), event)
	}
	// The listed topics, then what is left of the server's totals: _other.
	rest := totals(st.Counters)
	names := make([]string, len(listed))
	for i, t := range listed {
		names[i] = t.Name
		s.topic(t, gauge, counter)
		for k, v := range topicTotals(t) {
			rest[k] -= v
		}
	}
	if total > s.opts.MaxTopics {
		for k, v := range rest {
			if k.state != "" {
				gauge(jobsDesc, float64(v), Other, k.state)
			} else {
				counter(jobEventsDesc, float64(v), Other, k.event)
			}
		}
		// This broker knows which topics its consumers wait on: every one
		// not listed, whether Redis holds it yet or not, is _other's.
		gauge(waitingDesc, float64(s.d.WaitingElsewhere(names)), Other)
	}
	return nil
}

// schedules emits the schedules' series: the first MaxTopics by name each
// their own, as topics have; the rest (up to [jobs] max_schedules, which
// anyone who may PUT chooses the number of) summed under schedule="_other".
func (s *store) schedules(list []job.Schedule, counter emit) {
	slices.SortFunc(list, func(a, b job.Schedule) int { return strings.Compare(a.Name, b.Name) })
	var other job.Schedule
	for i, sc := range list {
		if i >= s.opts.MaxTopics {
			other.Name = Other
			other.Fires, other.Skips, other.Refused, other.Late = other.Fires+sc.Fires, other.Skips+sc.Skips,
				other.Refused+sc.Refused, other.Late+sc.Late
			continue
		}
		scheduleSeries(sc, counter)
	}
	if other.Name != "" {
		scheduleSeries(other, counter)
	}
}

func scheduleSeries(sc job.Schedule, counter emit) {
	counter(scheduleFiresDesc, float64(sc.Fires), sc.Name, "pushed")
	counter(scheduleFiresDesc, float64(sc.Skips), sc.Name, "skipped")
	counter(scheduleFiresDesc, float64(sc.Refused), sc.Name, "refused")
	counter(scheduleLateDesc, sc.Late.Seconds(), sc.Name)
}

// topic emits one topic's series.
func (s *store) topic(t job.TopicStats, gauge, counter emit) {
	for k, v := range topicTotals(t) {
		if k.state != "" {
			gauge(jobsDesc, float64(v), t.Name, k.state)
		} else {
			counter(jobEventsDesc, float64(v), t.Name, k.event)
		}
	}
	gauge(waitingDesc, float64(s.d.WaitingOn(t.Name)), t.Name)
	gauge(ageDesc, t.ReadyAge().Seconds(), t.Name)
	most, _ := strconv.ParseInt(t.Settings["max_reserved"], 10, 64)
	tokens, rated := t.RateTokens()
	if rated {
		gauge(tokensDesc, float64(tokens), t.Name)
	}
	if most > 0 {
		gauge(maxReservedDesc, float64(most), t.Name)
	}
	if rated || most > 0 || t.Limited > 0 {
		counter(limitedDesc, float64(t.Limited), t.Name)
		counter(limitedTimeDesc, t.LimitedTime.Seconds(), t.Name)
	}
}

// key names a state's count or an event's total.
type key struct{ state, event string }

// topicTotals are a topic's counts and totals by key.
func topicTotals(t job.TopicStats) map[key]int64 {
	return byKey([]int64{t.Ready, t.Delayed, t.Reserved, t.Buried, t.Dead, t.Completed, t.Cancelled,
		t.Jobs, t.Reserves, t.Deletes, t.Failures, t.DeadTotal, t.Expired, t.Discarded, t.CompletedTotal, t.CancelledTotal})
}

// totals are the server's, the same keys summed over every topic.
func totals(c job.Counters) map[key]int64 {
	return byKey([]int64{c.Ready, c.Delayed, c.Reserved, c.Buried, c.Dead, c.Completed, c.Cancelled,
		c.Jobs, c.Reserves, c.Deletes, c.Failures, c.DeadTotal, c.Expired, c.Discarded, c.CompletedTotal, c.CancelledTotal})
}

// keys are the series of gmq_jobs (states) and gmq_jobs_total (events), in
// byKey's order.
var keys = []key{{state: "ready"}, {state: "delayed"}, {state: "reserved"}, {state: "buried"}, {state: "dead"},
	{state: "completed"}, {state: "cancelled"}, {event: "pushed"}, {event: "reserved"}, {event: "deleted"}, {event: "failed"},
	{event: "dead"}, {event: "expired"}, {event: "discarded"}, {event: "completed"}, {event: "cancelled"}}

func byKey(values []int64) map[key]int64 {
	out := make(map[key]int64, len(keys))
	for i, k := range keys {
		out[k] = values[i]
	}
	return out
}
