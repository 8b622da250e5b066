package metrics_test

import (
	"context"
	"errors"
	"net/http"
	"net/rpc/jsonrpc"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
	"github.com/gmq/gmq/dispatcher"
	"github.com/gmq/gmq/job"
)

func TestMain(m *testing.M) { brokertest.Main(m) }

// scrape reads /metrics and parses it with Prometheus's own text parser.
func scrape(t *testing.T, url, token string) map[string]*dto.MetricFamily {
	t.Helper()
	req, _ := http.NewRequest("GET", url+"/metrics", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("the metrics do not parse: %v", err)
	}
	return families
}

// value is the sample of family name whose labels are all of want (name=value pairs).
func value(t *testing.T, families map[string]*dto.MetricFamily, name string, want ...string) float64 {
	t.Helper()
	f, ok := families[name]
	if !ok {
		t.Fatalf("no metric %s", name)
	}
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		match := true
		for i := 0; i+1 < len(want); i += 2 {
			if labels[want[i]] != want[i+1] {
				match = false
			}
		}
		if !match {
			continue
		}
		switch {
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	t.Fatalf("no %s%v", name, want)
	return 0
}

// After a scripted workload the metrics say what happened, per topic and
// summed past max_topics; they pass Prometheus's lint.
func TestMetricsAfterAWorkload(t *testing.T) {
	b := brokertest.Fresh(t, func(c *config.Config) {
		c.MetricsMaxTopics = 2
		c.MetricsCache = 0
		c.Token = "t0ken"
	})
	d := b.Broker.Dispatcher()
	ctx := t.Context()
	push := func(topic string, n int) {
		for range n {
			if _, err := d.Push(ctx, job.Spec{Topic: topic, Body: "x", TTR: time.Minute, Priority: 1,
				Retry: &job.RetryPolicy{MaxAttempts: new(int)}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	push("a", 3)
	push("b", 2)
	push("c", 4) // past max_topics: "_other"
	push("d", 1)
	j, err := popOne(d, ctx, []string{"a"}, 0)
	if err != nil || j == nil {
		t.Fatal(err)
	}
	if _, err := d.Settle(ctx, dispatcher.SettleParams{Ack: dispatcher.Ack{ID: j.PublicID()}, Action: dispatcher.ActionAck}); err != nil {
		t.Fatal(err)
	}
	j, _ = popOne(d, ctx, []string{"a"}, 0)
	if _, err := d.Settle(ctx, dispatcher.SettleParams{Ack: dispatcher.Ack{ID: j.PublicID()}, Action: dispatcher.ActionFail, Reason: "no"}); err != nil {
		t.Fatal(err)
	}
	// Some HTTP traffic for the request histogram.
	req, _ := http.NewRequest("GET", b.URL+"/api/v1/stats", nil)
	req.Header.Set("Authorization", "Bearer t0ken")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}

	rc, err := jsonrpc.Dial("tcp", b.RPCAddr)
	if err != nil {
		t.Fatal(err)
	}
	var reply string
	if err := rc.Call("Service.Push", map[string]any{"topic": "d", "body": "rpc"}, &reply); err != nil {
		t.Fatal(err)
	}
	rc.Close()
	if got := brokertest.Lines(t, b.BeanstalkAddr, "stats\r\n", 1)[0]; !strings.HasPrefix(got, "OK ") {
		t.Fatalf("beanstalkd stats: %q", got)
	}
	if got := brokertest.Lines(t, b.KestrelAddr, "get bad~name\r\n", 1)[0]; !strings.HasPrefix(got, "CLIENT_ERROR") {
		t.Fatalf("kestrel get of a bad name: %q", got)
	}
	if resp, err := http.Get(b.URL + "/metrics"); err != nil || resp.StatusCode != 401 {
		t.Fatalf("/metrics without the token: %v %v", resp, err)
	}
	// A consumer waiting on a topic past max_topics (one Redis does not hold
	// yet) is summed under _other.
	waitCtx, stopWaiting := context.WithCancel(ctx)
	var waiting sync.WaitGroup
	waiting.Go(func() {
		if _, err := popOne(d, waitCtx, []string{"zz"}, time.Minute); err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("the waiting pop: %v", err)
		}
	})
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) { // a minute: only a failure waits it out
		if st, err := d.Stats(ctx); err == nil && st.Waiting == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the consumer is not waiting")
		}
	}
	m := scrape(t, b.URL, "t0ken")
	stopWaiting()
	waiting.Wait()
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"gmq_topic_jobs", []string{"topic", "a", "state", "ready"}, 1},
		{"gmq_topic_jobs", []string{"topic", "a", "state", "delayed"}, 1}, // failed: waiting its backoff
		{"gmq_topic_jobs", []string{"topic", "b", "state", "ready"}, 2},
		{"gmq_topic_jobs", []string{"topic", "_other", "state", "ready"}, 6},
		{"gmq_jobs_total", []string{"topic", "a", "event", "pushed"}, 3},
		{"gmq_jobs_total", []string{"topic", "a", "event", "reserved"}, 2},
		{"gmq_jobs_total", []string{"topic", "a", "event", "deleted"}, 1},
		{"gmq_jobs_total", []string{"topic", "a", "event", "failed"}, 1},
		{"gmq_jobs_total", []string{"topic", "_other", "event", "pushed"}, 6},
		{"gmq_topics", nil, 4},
		{"gmq_waiting_consumers", []string{"topic", "_other"}, 1},
		{"gmq_store_up", nil, 1},
		{"gmq_request_duration_seconds", []string{"front_end", "http", "op", "GET /api/v1/stats", "code", "200"}, 1},
		{"gmq_request_duration_seconds", []string{"front_end", "rpc", "op", "Service.Push", "code", "ok"}, 1},
		{"gmq_request_duration_seconds", []string{"front_end", "beanstalk", "op", "stats", "code", "ok"}, 1},
		{"gmq_request_duration_seconds", []string{"front_end", "kestrel", "op", "get", "code", "client_error"}, 1},
		{"gmq_build_info", []string{"version", "test"}, 1},
	} {
		if got := value(t, m, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if n := value(t, m, "gmq_connections", "front_end", "http"); n < 1 { // this scrape's, and perhaps a kept-alive one
		t.Errorf("HTTP connections: %v", n)
	}
	if age := value(t, m, "gmq_oldest_ready_age_seconds", "topic", "b"); age < 0 || age > 60 {
		t.Errorf("queue latency of b: %v", age)
	}
	if n := value(t, m, "gmq_batch_operations"); n < 1 {
		t.Errorf("no batch observed: %v", n)
	}
	if _, ok := m["go_goroutines"]; !ok {
		t.Error("no Go collector")
	}
	// Under OpenMetrics a counter's family is its name without _total: no
	// other family may have that name (gmq_jobs did, beside gmq_jobs_total).
	for name, f := range m {
		if base, ok := strings.CutSuffix(name, "_total"); ok && strings.HasPrefix(name, "gmq_") && f.GetType() == dto.MetricType_COUNTER {
			if _, clash := m[base]; clash {
				t.Errorf("%s clashes with the counter %s under OpenMetrics", base, name)
			}
		}
	}

	// Prometheus's own lint of the exposition.
	req, _ = http.NewRequest("GET", b.URL+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer t0ken")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	problems, err := promlint.New(resp.Body).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if !strings.HasPrefix(p.Metric, "go_") && !strings.HasPrefix(p.Metric, "process_") {
			t.Errorf("lint: %s: %s", p.Metric, p.Text)
		}
	}
}

// The example alert rules and Grafana dashboard in docs/ name only metrics
// gmq has.
func TestDocsNameRealMetrics(t *testing.T) {
	b := brokertest.Fresh(t, func(c *config.Config) {
		c.MetricsCache = 0
		c.Topics = map[string]job.TopicConfig{"t": {"rate": "10", "max_reserved": "5"}} // the flow-control series too
	})
	if _, err := b.Broker.Dispatcher().Push(t.Context(), job.Spec{Topic: "t", Body: "x"}); err != nil {
		t.Fatal(err)
	}
	if resp, err := http.Get(b.URL + "/api/v1/stats"); err == nil { // a request for the histogram
		resp.Body.Close()
	}
	have := scrape(t, b.URL, "")
	for _, file := range []string{"../docs/alerts.yml", "../docs/grafana-dashboard.json"} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		names := regexp.MustCompile(`gmq_[a-z_]+`).FindAllString(string(data), -1)
		if len(names) == 0 {
			t.Fatalf("%s names no gmq metric", file)
		}
		for _, name := range names {
			base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")
			if _, ok := have[base]; !ok {
				t.Errorf("%s names %s, which gmq does not export", file, name)
			}
		}
	}
}

// A cron schedule's fires and lateness are series of their own.
func TestScheduleMetrics(t *testing.T) {
	b := brokertest.Fresh(t, func(c *config.Config) { c.MetricsCache = 0 })
	brokertest.MustCall(t, 200, "PUT", b.URL+"/api/v1/schedules/tick", `{"cron":"* * * * * *","job":{"topic":"ticks","body":"x"}}`)
	// The schedule fires each second, its first fire within one (later on
	// a loaded machine): a minute is only for a failure.
	deadline := time.Now().Add(time.Minute)
	for {
		have := scrape(t, b.URL, "")
		if f, ok := have["gmq_schedule_fires_total"]; ok && len(f.Metric) == 3 && f.Metric[0].GetCounter().GetValue()+f.Metric[1].GetCounter().GetValue()+f.Metric[2].GetCounter().GetValue() >= 1 {
			if _, ok := have["gmq_schedule_lateness_seconds_total"]; !ok {
				t.Fatal("no lateness series")
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no fire counted in a minute: %v", have["gmq_schedule_fires_total"])
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// popOne pops one job of topics (nil: none within timeout).
func popOne(d *dispatcher.Dispatcher, ctx context.Context, topics []string, timeout time.Duration) (*job.Job, error) {
	jobs, err := d.Pop(ctx, dispatcher.PopParams{Topics: topics, Timeout: timeout})
	if len(jobs) == 0 {
		return nil, err
	}
	return jobs[0], err
}
