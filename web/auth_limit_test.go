package web_test

import (
	"net/http"
	"testing"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
)

// Wrong bearer tokens are limited per client address, on every route (3,000
// in half a second all got 401 before), and the limit never refuses the
// right token, nor a client that sends none (issue 20).
func TestWrongTokensLimited(t *testing.T) {
	b := brokertest.Fresh(t, func(c *config.Config) { c.Token = "a-long-enough-token-1" })
	bearer := func(token, path string) *http.Response {
		t.Helper()
		req, err := http.NewRequest("GET", b.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	paths := []string{"/api/v1/stats", "/api/v1/topics", "/metrics", "/api/v1/jobs/1"}
	for i := range 5 {
		if resp := bearer("guess", paths[i%len(paths)]); resp.StatusCode != 401 {
			t.Fatalf("wrong token %d: %d, want 401", i, resp.StatusCode)
		}
	}
	for i := range 50 {
		resp := bearer("guess", paths[i%len(paths)])
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("wrong token %d past the limit: %d, want 429 with Retry-After", i+5, resp.StatusCode)
		}
	}
	for _, path := range paths[:3] {
		if resp := bearer("a-long-enough-token-1", path); resp.StatusCode != 200 {
			t.Fatalf("the right token from the same address, %s: %d, want 200", path, resp.StatusCode)
		}
	}
}
