package web_test

import (
	"os"
	"testing"
)

// GET /api/v1/status names the broker's version beside the status, as
// /api/v1/stats does (brokertest's broker is version "test"); stats names
// the broker's process too, for a signal (docs/topics.md: kill -HUP).
func TestStatusNamesVersion(t *testing.T) {
	b := broker(t)
	st := mustCall(t, 200, "GET", b.URL+"/api/v1/status", ``)
	if st["status"] != "up" || st["version"] != "test" {
		t.Errorf("GET /api/v1/status: %v, want status up and version test", st)
	}
	stats := mustCall(t, 200, "GET", b.URL+"/api/v1/stats", ``)
	if stats["version"] != "test" || stats["pid"] != float64(os.Getpid()) {
		t.Errorf("GET /api/v1/stats: version %v pid %v, want test and %d (the broker runs in this process)", stats["version"], stats["pid"], os.Getpid())
	}
}
