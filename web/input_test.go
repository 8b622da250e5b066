package web_test

import (
	"strings"
	"testing"
)

// Honest answers to bad input (issue 20): absurd list windows are a 400 or
// an empty page, never a 500 from the store's arithmetic.
func TestListWindowsOverHTTP(t *testing.T) {
	b := broker(t)
	api := b.URL + "/api/v1"
	for range 3 {
		mustCall(t, 201, "POST", api+"/jobs", `{"topic":"w","body":"x"}`)
	}
	empty := []string{
		"/topics/w/jobs?offset=100000000000000000", // 1e17: the sum offset+limit was a float Redis refused
		"/topics/w/jobs?offset=9223372036854775807&limit=500",
		"/topics/w/jobs?offset=3",
		"/topics/w/dead?offset=100000000000000000",
		"/topics/w/dead?offset=9223372036854775807&limit=1000",
		"/topics/w/jobs?state=delayed&offset=99999999999999999",
	}
	for _, path := range empty {
		out := mustCall(t, 200, "GET", api+path, ``)
		if jobs, _ := out["jobs"].([]any); len(jobs) != 0 {
			t.Errorf("%s: %v, want an empty page", path, out)
		}
	}
	if out := mustCall(t, 200, "GET", api+"/topics/w/jobs?offset=0&limit=100000000", ``); len(out["jobs"].([]any)) != 3 || out["total"] != 3.0 {
		t.Errorf("a huge limit, cut to the cap: %v", out)
	}
	if out := mustCall(t, 200, "GET", api+"/topics/w/jobs?offset=2&limit=5", ``); len(out["jobs"].([]any)) != 1 {
		t.Errorf("the last page: %v", out)
	}
	bad := map[string]string{
		"/topics/w/jobs?offset=1e17":                      "offset must be a whole number",
		"/topics/w/jobs?offset=-1":                        "offset must be a whole number",
		"/topics/w/jobs?offset=99999999999999999999":      "offset must be a whole number",
		"/topics/w/jobs?limit=0":                          "limit must be a whole number, 1 or more",
		"/topics/w/jobs?limit=-5":                         "limit must be a whole number",
		"/topics/w/dead?offset=1e17":                      "offset must be a whole number",
		"/topics/w/dead?limit=" + strings.Repeat("9", 30): "limit must be a whole number",
	}
	for path, says := range bad {
		code, out := call(t, "GET", api+path, ``)
		if msg, _ := out["error"].(string); code != 400 || !strings.Contains(msg, says) {
			t.Errorf("%s: %d %v, want 400 saying %q", path, code, out, says)
		}
	}
}
