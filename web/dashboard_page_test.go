package web_test

import (
	"strings"
	"testing"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
)

// The dashboard's page tells its script whether the broker requires a
// token (the script shows "Sign out" only then), under the dashboard's
// Content-Security-Policy, and loads its scripts from the broker.
func TestDashboardPageSaysWhetherTokenRequired(t *testing.T) {
	for _, c := range []struct {
		token, want string
	}{{"", `data-auth="none"`}, {"s3cret-s3cret-s3cret", `data-auth="token"`}} {
		b := brokertest.Fresh(t, func(cfg *config.Config) { cfg.Token = c.token })
		var header []string
		if c.token != "" {
			header = []string{"Authorization", "Bearer " + c.token}
		}
		for _, path := range []string{"/dashboard/", "/dashboard/index.html"} {
			resp, body := get(t, noRedirect, b.URL+path, header...)
			if path == "/dashboard/index.html" { // http.FileServer's canonical address of an index
				if resp.StatusCode != 301 || resp.Header.Get("Location") != "./" {
					t.Fatalf("token %q, %s: %d to %q", c.token, path, resp.StatusCode, resp.Header.Get("Location"))
				}
				continue
			}
			if resp.StatusCode != 200 || !strings.Contains(body, c.want) || strings.Count(body, "data-auth=") != 1 {
				t.Fatalf("token %q, %s: %d, want one %s in\n%s", c.token, path, resp.StatusCode, c.want, body)
			}
			if csp := resp.Header.Get("Content-Security-Policy"); !strings.HasPrefix(csp, "default-src 'self';") {
				t.Fatalf("token %q: Content-Security-Policy %q", c.token, csp)
			}
			for _, script := range []string{"parts.js", "jobs.js", "app.js"} {
				if !strings.Contains(body, `<script src="/dashboard/`+script+`"></script>`) {
					t.Errorf("the page does not load %s", script)
				}
				if resp, js := get(t, noRedirect, b.URL+"/dashboard/"+script, header...); resp.StatusCode != 200 || len(js) < 1000 {
					t.Errorf("%s: %d, %d bytes", script, resp.StatusCode, len(js))
				}
			}
		}
	}
}
