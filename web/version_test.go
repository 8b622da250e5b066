package web_test

import "testing"

// GET /api/v1/status names the broker's version beside the status, as
// /api/v1/stats does (brokertest's broker is version "test").
func TestStatusNamesVersion(t *testing.T) {
	b := broker(t)
	st := mustCall(t, 200, "GET", b.URL+"/api/v1/status", ``)
	if st["status"] != "up" || st["version"] != "test" {
		t.Errorf("GET /api/v1/status: %v, want status up and version test", st)
	}
}
