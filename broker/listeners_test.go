package broker_test

import (
	"testing"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
)

// gmq start fits [server] max_connections = 0 to the open-file limit with
// config.Listeners, before the broker exists: it must count the listeners
// the broker then opens, whichever front ends are on.
func TestConfigCountsTheBrokersListeners(t *testing.T) {
	for _, tt := range []struct {
		name  string
		tweak func(*config.Config)
	}{
		{"every front end", func(*config.Config) {}},
		{"HTTP only", func(c *config.Config) { c.BeanstalkAddr, c.RPCAddr, c.KestrelAddr = "", "", "" }},
		{"and the metrics' own port", func(c *config.Config) { c.MetricsAddr = "127.0.0.1:0"; c.RPCAddr = "" }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var cfg config.Config
			b := brokertest.Fresh(t, func(c *config.Config) { tt.tweak(c); cfg = *c })
			if got, want := cfg.Listeners(), b.Broker.Listeners(); got != want {
				t.Errorf("config.Listeners() = %d, the broker opened %d", got, want)
			}
		})
	}
}
