package filelimit

import (
	"strings"
	"testing"
)

// unfitted stands for config.UnfittedMaxConnections, Fit's answer to an
// unknown limit.
const unfitted = 20000

func TestFileLimitWarning(t *testing.T) {
	cases := []struct {
		limit           uint64
		listeners, caps int
		warn            bool
	}{
		{limit: 0, listeners: 3, caps: 20000},                        // limit unknown
		{limit: 1 << 20, listeners: 3, caps: 20000},                  // fits
		{limit: 20000, listeners: 3, caps: 20000, warn: true},        // the old default
		{limit: 20000, listeners: 3, caps: 6633},                     // the advice fits
		{limit: 64, listeners: 1, caps: 1, warn: true},               // not even the reserve
		{limit: 65536, listeners: 1, caps: 65536 - 100, warn: false}, // exactly
	}
	for _, c := range cases {
		msg := Warning(c.limit, c.listeners, c.caps)
		if (msg != "") != c.warn || (c.warn && !strings.Contains(msg, "[server] max_connections")) {
			t.Errorf("Warning(%d, %d, %d) = %q, want a warning: %v", c.limit, c.listeners, c.caps, msg, c.warn)
		}
	}
}

// [server] max_connections = 0 fits the open-file limit, so a default start
// does not warn (it did on every start with 20,000 files and 4 listeners).
func TestFitConnections(t *testing.T) {
	cases := []struct {
		limit     uint64
		listeners int
		want      int
	}{
		{limit: 20000, listeners: 4, want: 4975},
		{limit: 1 << 20, listeners: 5, want: 209695},
		{limit: 0, listeners: 4, want: unfitted},
		{limit: 64, listeners: 4, want: 1}, // not even the reserve: one each, and the warning's advice
	}
	for _, c := range cases {
		got := Fit(c.limit, c.listeners, unfitted)
		if got != c.want {
			t.Errorf("Fit(%d, %d) = %d, want %d", c.limit, c.listeners, got, c.want)
		}
		if c.limit > 100 && Warning(c.limit, c.listeners, got) != "" {
			t.Errorf("Fit(%d, %d) = %d still warns", c.limit, c.listeners, got)
		}
	}
}
