package web_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
)

// The login form carries the dashboard address that sent the browser to
// it (its #, which browsers never send: the form's script copies it into
// the field next), and signing in lands there. Only a dashboard address
// is followed: anything else lands on the overview.
func TestLoginKeepsTheDashboardAddress(t *testing.T) {
	b := brokertest.Fresh(t, func(c *config.Config) { c.Token = "s3cret" })
	resp, body := get(t, noRedirect, b.URL+"/dashboard/login")
	csp := resp.Header.Get("Content-Security-Policy")
	if !strings.Contains(body, `<input type="hidden" name="next" value="">`) || !strings.Contains(body, "location.hash") ||
		!strings.Contains(csp, "script-src 'sha256-") || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Fatalf("the login form: CSP %q\n%s", csp, body)
	}
	long := "#/jobs/" + strings.Repeat("x", 1024-len("#/jobs/"))
	for _, c := range []struct{ next, want string }{
		{"#/jobs/123", "/dashboard/#/jobs/123"},
		{"#/topics/reports%2Fdaily/dead?page=3", "/dashboard/#/topics/reports%2Fdaily/dead?page=3"},
		{"#/topics/a/../../x", "/dashboard/#/topics/a/../../x"}, // as given: not cleaned
		{long, "/dashboard/" + long},
		{long + "x", "/dashboard/"}, // past 1,024 bytes
		{"", "/dashboard/"},
		{"#/", "/dashboard/#/"},
		{"#jobs/1", "/dashboard/"},
		{"https://evil.example/", "/dashboard/"},
		{"//evil.example/", "/dashboard/"},
		{"#/a\r\nSet-Cookie: x=1", "/dashboard/"},
		{"#/a b", "/dashboard/"},
		{"#/é", "/dashboard/"},
	} {
		resp, err := noRedirect.PostForm(b.URL+"/dashboard/login", url.Values{"token": {"s3cret"}, "next": {c.next}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != c.want || len(resp.Cookies()) != 1 {
			t.Errorf("next %q: %d to %q, want %q", c.next, resp.StatusCode, resp.Header.Get("Location"), c.want)
		}
	}
	// A wrong token shows the form again, still carrying the address
	// (escaped), for the next try.
	resp, err := noRedirect.PostForm(b.URL+"/dashboard/login", url.Values{"token": {"nope"}, "next": {`#/jobs/"><b>x`}})
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	page := string(data)
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(page, `name="next" value="#/jobs/&#34;&gt;&lt;b&gt;x"`) ||
		strings.Contains(page, "<b>x") || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "script-src 'sha256-") {
		t.Fatalf("a wrong token: %d\n%s", resp.StatusCode, page)
	}
}
