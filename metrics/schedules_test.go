package metrics_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
)

// Schedules' series are bounded as topics' are (issue 31: 3,000 schedules
// made 9,300 series): the first max_topics by name have their own, the rest
// are summed under schedule="_other"; and a PUT past [jobs] max_schedules is
// a 507 that says why, while changing one that exists is not refused.
func TestScheduleSeriesAndCap(t *testing.T) {
	b := brokertest.Fresh(t, func(c *config.Config) {
		c.MetricsMaxTopics = 2
		c.MetricsCache = 0
		c.MaxSchedules = 4
	})
	api := b.URL + "/api/v1"
	for i := range 4 {
		brokertest.MustCall(t, 200, "PUT", fmt.Sprintf("%s/schedules/s%d", api, i), `{"cron":"0 3 * * *","job":{"topic":"nightly","body":"x"}}`)
		for range i + 1 { // s0 fires once, s1 twice...
			brokertest.MustCall(t, 201, "POST", fmt.Sprintf("%s/schedules/s%d/fire", api, i), ``)
		}
	}
	families := scrape(t, b.URL, "")
	for _, c := range []struct {
		schedule string
		fires    float64
	}{{"s0", 1}, {"s1", 2}, {"_other", 3 + 4}} {
		if got := value(t, families, "gmq_schedule_fires_total", "schedule", c.schedule, "outcome", "pushed"); got != c.fires {
			t.Errorf("gmq_schedule_fires_total{schedule=%q}: %v, want %v", c.schedule, got, c.fires)
		}
	}
	for _, m := range families["gmq_schedule_fires_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "schedule" && (l.GetValue() == "s2" || l.GetValue() == "s3") {
				t.Errorf("a series of its own for %s, past max_topics", l.GetValue())
			}
		}
	}
	code, out := brokertest.Call(t, "PUT", api+"/schedules/s4", `{"cron":"0 3 * * *","job":{"topic":"nightly","body":"x"}}`)
	if msg, _ := out["error"].(string); code != 507 || !strings.Contains(msg, "max_schedules") {
		t.Fatalf("a fifth schedule: %d %v, want 507 naming max_schedules", code, out)
	}
	brokertest.MustCall(t, 200, "PUT", api+"/schedules/s0", `{"paused":true}`)
}
