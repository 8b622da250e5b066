package web_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/gmq/gmq/web"
)

// A path called with a method it does not take answers 405, on every route,
// with Allow naming every method it does take (HEAD wherever GET is) and an
// error naming the method: a wrong method is not a wrong path (404).
func TestWrongMethodIs405WithAllow(t *testing.T) {
	b := broker(t)
	routes := web.New(b.Dispatcher, web.Options{Metrics: http.NotFoundHandler(), OpenAPI: []byte("x")}).Routes()
	// takes is every method a route registers for a concrete path.
	takes := func(path string) []string {
		var out []string
		for _, r := range routes {
			method, pattern, _ := strings.Cut(r, " ")
			if matches(pattern, path) && !slices.Contains(out, method) {
				out = append(out, method)
			}
		}
		if slices.Contains(out, "GET") && !slices.Contains(out, "HEAD") && path != "/api/v1/pop" {
			out = append(out, "HEAD")
		}
		slices.Sort(out)
		return out
	}
	tried := 0
	for _, r := range routes {
		_, pattern, _ := strings.Cut(r, " ")
		path := concrete(pattern)
		allowed := takes(path)
		for _, method := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"} {
			if slices.Contains(allowed, method) {
				continue
			}
			tried++
			req, _ := http.NewRequest(method, b.URL+path, nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			got := strings.Split(resp.Header.Get("Allow"), ", ")
			slices.Sort(got)
			if resp.StatusCode != http.StatusMethodNotAllowed || !slices.Equal(got, allowed) {
				t.Errorf("%s %s: %d Allow %q, want 405 Allow %q", method, path, resp.StatusCode, got, allowed)
			}
		}
	}
	if tried < 50 {
		t.Fatalf("only %d wrong methods tried", tried)
	}
	// The answer says what went wrong, as every error does.
	code, out := call(t, "GET", b.URL+"/api/v1/jobs/x/ack", ``)
	if msg, _ := out["error"].(string); code != 405 || !strings.Contains(msg, "method GET is not allowed") || !strings.Contains(msg, "POST") {
		t.Fatalf("GET ack: %d %v", code, out)
	}
}

// concrete is a path a route pattern matches: each :name a word, *name a file.
func concrete(pattern string) string {
	parts := strings.Split(pattern, "/")
	for i, p := range parts {
		switch {
		case strings.HasPrefix(p, ":"):
			parts[i] = "x"
		case strings.HasPrefix(p, "*"):
			parts[i] = "index.html"
		}
	}
	return strings.Join(parts, "/")
}

// matches tells whether gin's pattern matches path.
func matches(pattern, path string) bool {
	ps, xs := strings.Split(pattern, "/"), strings.Split(path, "/")
	for i, p := range ps {
		if strings.HasPrefix(p, "*") { // at least the slash before it: /dashboard/*file is not /dashboard
			return len(xs) > i
		}
		if i >= len(xs) || (!strings.HasPrefix(p, ":") && p != xs[i]) {
			return false
		}
	}
	return len(ps) == len(xs)
}
