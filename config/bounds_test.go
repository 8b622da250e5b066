package config

import (
	"strings"
	"testing"
	"time"
)

// Every setting in seconds has the bounds a job's own has, 0 to 2^32-1
// (issue 20: [topics] backoff_base = 9223372036854775807 was taken, and a
// failed job then showed no due time); a number of seconds too large for a
// Duration is refused, not wrapped around.
func TestDurationBounds(t *testing.T) {
	ok := map[string]func(Config) bool{
		"[jobs]\ndefault_ttr = 4294967295\n":       func(c Config) bool { return c.DefaultTTR == 4294967295*time.Second },
		"[jobs]\ndefault_ttr = 0\n":                func(c Config) bool { return c.DefaultTTR == 0 },
		"[topics]\nbackoff_max = 4294967295\n":     func(c Config) bool { return c.TopicDefaults["backoff_max"] == "4294967295" },
		"[topic.t]\ndead_retention = 4294967295\n": func(c Config) bool { return c.Topics["t"]["dead_retention"] == "4294967295" },
	}
	for text, check := range ok {
		c, err := Parse([]byte(text))
		if err != nil || !check(c) {
			t.Errorf("%q: %v, want it taken", text, err)
		}
	}
	bad := map[string]string{
		"[jobs]\ndefault_ttr = 4294967296\n":                "[jobs] default_ttr",
		"[jobs]\ndefault_ttr = 1e300\n":                     "[jobs] default_ttr",
		"[jobs]\ndefault_ttr = NaN\n":                       "[jobs] default_ttr",
		"[jobs]\ndefault_ttr = -Inf\n":                      "[jobs] default_ttr",
		"[redis]\nconnect_timeout = 1e300\n":                "[redis] connect_timeout",
		"[server]\nrequest_timeout = 99999999999h\n":        "[server] request_timeout",
		"[topics]\nbackoff_base = 9223372036854775807\n":    "[topics] backoff_base: invalid: topic setting backoff_base",
		"[topics]\nbackoff_max = 4294967296\n":              "from 0 to 4294967295",
		"[topics]\nmax_age = 9223372036854775807\n":         "[topics] max_age",
		"[topic.t]\nmax_queue_age = 9223372036854775807\n":  "[topic.t] max_queue_age",
		"[topic.t]\ndead_retention = 9223372036854775807\n": "[topic.t] dead_retention",
	}
	for text, says := range bad {
		if _, err := Parse([]byte(text)); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("%q: %v, want an error naming %q", text, err, says)
		}
	}
}

// A metrics listener beyond loopback next to a token is warned of at start.
func TestMetricsBeyondToken(t *testing.T) {
	for _, tt := range []struct {
		token, addr string
		want        bool
	}{
		{"", "0.0.0.0:9100", false},
		{"t", "", false},
		{"t", "127.0.0.1:9100", false},
		{"t", "localhost:9100", false},
		{"t", "0.0.0.0:9100", true},
		{"t", ":9100", true},
	} {
		c := Default()
		c.Token, c.MetricsAddr = tt.token, tt.addr
		if got := c.MetricsBeyondToken(); got != tt.want {
			t.Errorf("token %q, [metrics] addr %q: %v, want %v", tt.token, tt.addr, got, tt.want)
		}
	}
}
