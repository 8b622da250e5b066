package web_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
)

// noRedirect reports redirects instead of following them.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// get sends a GET with the given header pairs, not following redirects.
func get(t *testing.T, _ *http.Client, url string, header ...string) (*http.Response, string) {
	t.Helper()
	return send(t, "GET", url, "", header...)
}

func TestDashboardServedWithoutToken(t *testing.T) {
	b := broker(t)
	resp, _ := get(t, noRedirect, b.URL+"/")
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/dashboard/" {
		t.Fatalf("/ answered %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	for _, path := range []string{"/dashboard/", "/dashboard/app.js", "/dashboard/style.css"} {
		if resp, body := get(t, noRedirect, b.URL+path); resp.StatusCode != 200 || len(body) < 100 {
			t.Fatalf("%s: %d, %d bytes", path, resp.StatusCode, len(body))
		}
	}
	if resp, body := get(t, noRedirect, b.URL+"/api/v1/stats"); resp.StatusCode != 200 || !strings.Contains(body, `"connections":{"beanstalk":0,"kestrel":0,"rpc":0,"text":0,"thrift":0}`) {
		t.Fatalf("/api/v1/stats: %d %s", resp.StatusCode, body)
	}
	if resp, body := get(t, noRedirect, b.URL+"/api/v1/redis"); resp.StatusCode != 200 || !strings.Contains(body, "used_memory") {
		t.Fatalf("/api/v1/redis: %d %s", resp.StatusCode, body)
	}
	if resp, body := get(t, noRedirect, b.URL+"/api/v1/buckets"); resp.StatusCode != 200 || !strings.Contains(body, `"bucket":3`) {
		t.Fatalf("/api/v1/buckets: %d %s", resp.StatusCode, body)
	}
}

func TestTokenRequired(t *testing.T) {
	b := brokertest.Fresh(t, func(c *config.Config) { c.Token = "s3cret" })
	for _, path := range []string{"/api/v1/stats", "/api/v1/pop?topic=t", "/api/v1/jobs/1"} {
		if resp, body := get(t, noRedirect, b.URL+path); resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "token") {
			t.Fatalf("%s without the token: %d %s", path, resp.StatusCode, body)
		}
		if resp, _ := get(t, noRedirect, b.URL+path, "Authorization", "Bearer wrong"); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("%s with a wrong token: %d", path, resp.StatusCode)
		}
	}
	if resp, _ := get(t, noRedirect, b.URL+"/api/v1/stats", "Authorization", "Bearer s3cret"); resp.StatusCode != 200 {
		t.Fatalf("stats with the token: %d", resp.StatusCode)
	}
	if resp, _ := get(t, noRedirect, b.URL+"/healthz"); resp.StatusCode != 200 {
		t.Fatalf("healthz must stay open for probes: %d", resp.StatusCode)
	}
	// The dashboard sends a browser to its login form, which sets a cookie.
	resp, _ := get(t, noRedirect, b.URL+"/dashboard/")
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/dashboard/login" {
		t.Fatalf("dashboard without the token: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp, body := get(t, noRedirect, b.URL+"/dashboard/login"); resp.StatusCode != 200 || !strings.Contains(body, `name="token"`) {
		t.Fatalf("login form: %d", resp.StatusCode)
	}
	wrong, err := noRedirect.PostForm(b.URL+"/dashboard/login", url.Values{"token": {"nope"}})
	if err != nil {
		t.Fatal(err)
	}
	wrong.Body.Close()
	if wrong.StatusCode != http.StatusUnauthorized || len(wrong.Cookies()) != 0 {
		t.Fatalf("wrong token at login: %d %v", wrong.StatusCode, wrong.Cookies())
	}
	right, err := noRedirect.PostForm(b.URL+"/dashboard/login", url.Values{"token": {"s3cret"}})
	if err != nil {
		t.Fatal(err)
	}
	right.Body.Close()
	cookies := right.Cookies()
	if right.StatusCode != http.StatusSeeOther || len(cookies) != 1 || !cookies[0].HttpOnly {
		t.Fatalf("login: %d %v", right.StatusCode, cookies)
	}
	if resp, body := get(t, noRedirect, b.URL+"/dashboard/", "Cookie", cookies[0].Name+"="+cookies[0].Value); resp.StatusCode != 200 || !strings.Contains(body, "gmq dashboard") {
		t.Fatalf("dashboard with the cookie: %d", resp.StatusCode)
	}
	if resp, _ := get(t, noRedirect, b.URL+"/api/v1/stats", "Cookie", cookies[0].Name+"="+cookies[0].Value); resp.StatusCode != 200 {
		t.Fatalf("API with the cookie: %d", resp.StatusCode)
	}
}

// do sends a request and decodes its JSON answer.
func do(t *testing.T, req *http.Request) map[string]any {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode >= 300 {
		t.Fatalf("%s %s: %d %v %v", req.Method, req.URL.Path, resp.StatusCode, out, err)
	}
	return out
}

// quote renders s as a JSON string.
func quote(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}
