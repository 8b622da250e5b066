package memcache

import (
	"strings"
	"testing"
	"time"
)

// A get's /t= past kestrel's range is a client error (issue 20:
// /t=9223372036855 overflowed into a negative wait, answered as
// "SERVER_ERROR … redis unavailable"); within it, the wait is cut at maxWait.
func TestGetTimeoutBounds(t *testing.T) {
	for key, want := range map[string]time.Duration{
		"q/t=0":          0,
		"q/t=1500":       1500 * time.Millisecond,
		"q/t=86400000":   maxWait,
		"q/t=2147483647": maxWait,
	} {
		o, err := parseGet(key)
		if err != nil || o.timeout != want {
			t.Errorf("parseGet(%q) = %v, %v; want a wait of %v", key, o.timeout, err, want)
		}
	}
	for key, says := range map[string]string{
		"q/t=2147483648":            "at most 2147483647 milliseconds",
		"q/t=9223372036855":         "at most 2147483647 milliseconds",
		"q/t=9223372036854775807":   "at most 2147483647 milliseconds",
		"q/t=99999999999999999999":  "at most 2147483647 milliseconds",
		"q/t=-1":                    "want /t=<milliseconds>",
		"q/t=-99999999999999999999": "want /t=<milliseconds>",
		"q/t=1e3":                   "want /t=<milliseconds>",
	} {
		if _, err := parseGet(key); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("parseGet(%q): %v, want an error saying %q", key, err, says)
		}
	}
}
