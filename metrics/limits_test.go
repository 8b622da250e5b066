package metrics_test

import (
	"testing"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
	"github.com/gmq/gmq/job"
)

// A topic's limits show in /metrics: its rate's tokens, its max_reserved,
// and the pops its limits held back; a topic with none has none of them.
func TestLimitSeries(t *testing.T) {
	b := brokertest.Fresh(t, func(c *config.Config) {
		c.MetricsCache = 0
		c.Topics = map[string]job.TopicConfig{"slow": {"rate": "0.5", "burst": "2"}, "few": {"max_reserved": "1"}}
	})
	api := b.URL + "/api/v1"
	for _, topic := range []string{"slow", "slow", "slow", "few", "few", "free"} {
		brokertest.MustCall(t, 201, "POST", api+"/jobs", `{"topic":"`+topic+`","body":"x"}`)
	}
	for _, topic := range []string{"slow", "slow", "few", "free"} {
		brokertest.MustCall(t, 200, "GET", api+"/pop?topic="+topic, ``)
	}
	for _, topic := range []string{"slow", "few"} {
		brokertest.MustCall(t, 204, "GET", api+"/pop?topic="+topic, ``) // held back
	}
	m := scrape(t, b.URL, "")
	for _, c := range []struct {
		name, topic string
		want        float64
	}{
		{"gmq_topic_tokens", "slow", 0},
		{"gmq_topic_limited_total", "slow", 1},
		{"gmq_topic_max_reserved", "few", 1},
		{"gmq_topic_limited_total", "few", 1},
		{"gmq_topic_limited_seconds_total", "few", 0}, // no consumer waited
		{"gmq_topic_jobs", "few", 1},                  // reserved, against the limit
	} {
		labels := []string{"topic", c.topic}
		if c.name == "gmq_topic_jobs" {
			labels = append(labels, "state", "reserved")
		}
		if got := value(t, m, c.name, labels...); got != c.want {
			t.Errorf("%s{topic=%q} = %v, want %v", c.name, c.topic, got, c.want)
		}
	}
	for _, name := range []string{"gmq_topic_tokens", "gmq_topic_max_reserved", "gmq_topic_limited_total"} {
		for _, s := range m[name].GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetValue() == "free" {
					t.Errorf("%s has a series for a topic without limits", name)
				}
			}
		}
	}
}
