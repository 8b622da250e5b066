package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gmq/gmq/dispatcher"
	"github.com/gmq/gmq/job"
)

var statusDesc = prometheus.NewDesc("gmq_status",
	"1 for the server status this broker announces (kind=\"announced\": a stricter one pending its grace period included) and the one it obeys (kind=\"enforced\"), 0 for the others.",
	[]string{"kind", "status"}, nil)

// statusCollector reports the broker's status at each scrape, uncached: a
// load balancer's or an alert's view of a drain should not wait.
type statusCollector struct{ d *dispatcher.Dispatcher }

func (s statusCollector) Describe(ch chan<- *prometheus.Desc) { ch <- statusDesc }

func (s statusCollector) Collect(ch chan<- prometheus.Metric) {
	for _, kind := range []struct {
		name string
		now  job.Status
	}{{"announced", s.d.Status().Announced()}, {"enforced", s.d.Status().Enforced()}} {
		for st := job.Up; st <= job.Quiescent; st++ {
			v := 0.0
			if st == kind.now {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(statusDesc, prometheus.GaugeValue, v, kind.name, st.String())
		}
	}
}
