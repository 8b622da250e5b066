package metrics_test

import (
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
	"github.com/gmq/gmq/job"
)

// gmq_status says the status a broker announces at once, and the one it
// obeys until a stricter one's grace ends.
func TestStatusSeries(t *testing.T) {
	b := brokertest.Fresh(t, func(c *config.Config) {
		c.MetricsCache = 0
		c.StatusGrace, c.ShutdownTimeout = time.Hour, 100*time.Millisecond
	})
	if err := b.Dispatcher.Status().Set(t.Context(), job.ReadOnly); err != nil {
		t.Fatal(err)
	}
	m := scrape(t, b.URL, "")
	for _, c := range []struct {
		kind, status string
		want         float64
	}{
		{"announced", "readonly", 1},
		{"announced", "up", 0},
		{"enforced", "up", 1},
		{"enforced", "readonly", 0},
	} {
		if got := value(t, m, "gmq_status", "kind", c.kind, "status", c.status); got != c.want {
			t.Errorf("gmq_status{kind=%q,status=%q} = %v, want %v", c.kind, c.status, got, c.want)
		}
	}
}
