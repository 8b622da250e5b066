package web_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/gmq/gmq/web"
)

// Every /api/ path answers JSON, whatever is wrong with the request: a
// trailing slash (issue 49: /api/v1/batches/ answered gin's HTML 301 to
// /api/v1/batches), an unknown path, a wrong method. A client reads the
// error, never a redirect or a page.
func TestEveryAPIPathAnswersJSON(t *testing.T) {
	b := broker(t)
	routes := web.New(b.Dispatcher, web.Options{Metrics: http.NotFoundHandler(), OpenAPI: []byte("x")}).Routes()
	paths := []string{"/api", "/api/", "/api/v1", "/api/v1/", "/api/v2/stats", "/api/v1/nope", "/api/v1/jobs/x/nope",
		"/api/v1/jobs/x/ack/extra", "/api//v1/stats", "/api/v1//stats", "/api/V1/stats"}
	for _, r := range routes {
		_, pattern, _ := strings.Cut(r, " ")
		if strings.HasPrefix(pattern, "/api/") {
			paths = append(paths, concrete(pattern), concrete(pattern)+"/")
		}
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	tried := 0
	for _, path := range paths {
		for _, method := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"} {
			if !strings.HasSuffix(path, "/") && routeTakes(routes, method, path) {
				continue // a real request, answered by its handler
			}
			tried++
			req, _ := http.NewRequest(method, b.URL+path, nil)
			resp, err := noRedirect.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			var out map[string]any
			switch {
			case resp.StatusCode < 400:
				t.Errorf("%s %s: %d (Location %q), want a 4xx", method, path, resp.StatusCode, resp.Header.Get("Location"))
			case !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json"):
				t.Errorf("%s %s: %d %s %q, want JSON", method, path, resp.StatusCode, resp.Header.Get("Content-Type"), body)
			case method != "HEAD" && (json.Unmarshal(body, &out) != nil || out["error"] == nil):
				t.Errorf("%s %s: %d %q, want {\"error\": ...}", method, path, resp.StatusCode, body)
			}
		}
	}
	if tried < 300 {
		t.Fatalf("only %d requests tried", tried)
	}
	// A trailing slash is named as what is wrong.
	if code, out := call(t, "GET", b.URL+"/api/v1/batches/", ``); code != 404 || !strings.Contains(out["error"].(string), "/api/v1/batches") {
		t.Errorf("GET /api/v1/batches/: %d %v", code, out)
	}
}

// routeTakes says whether a route takes method on path (HEAD where GET is).
func routeTakes(routes []string, method, path string) bool {
	for _, r := range routes {
		m, pattern, _ := strings.Cut(r, " ")
		if matches(pattern, path) && (m == method || method == "HEAD" && m == "GET") {
			return true
		}
	}
	return false
}
