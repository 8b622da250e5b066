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

// send makes one request with the given header pairs ("Host" sets the
// request's host), not following redirects, and returns the answer with its body read.
func send(t *testing.T, method, url, body string, header ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(data)
}

// ask is send for its status code, body and headers.
func ask(t *testing.T, method, url, body string, header ...string) (int, string, http.Header) {
	t.Helper()
	resp, data := send(t, method, url, body, header...)
	return resp.StatusCode, data, resp.Header
}

// A page on another origin (another port of localhost counts) must not be
// able to act through the operator's browser, with or without a token; the
// issue saw one push a job and pause a topic.
func TestCrossOriginRequestsRefused(t *testing.T) {
	b := broker(t)
	api := b.URL + "/api/v1"
	host := strings.TrimPrefix(b.URL, "http://")
	job := `{"topic":"csrf","body":"x"}`
	cases := []struct {
		name, method, path, body string
		header                   []string
		want                     int
	}{
		{"a text/plain body (a form or no-cors fetch)", "POST", "/jobs", job, []string{"Content-Type", "text/plain"}, 415},
		{"a form body", "POST", "/jobs", job, []string{"Content-Type", "application/x-www-form-urlencoded"}, 415},
		{"no content type", "POST", "/jobs", job, nil, 415},
		{"another port of the same host", "POST", "/jobs", job, []string{"Content-Type", "application/json", "Origin", "http://127.0.0.1:1"}, 403},
		{"another site", "POST", "/topics/csrf/pause", `{"seconds":60}`, []string{"Content-Type", "application/json", "Origin", "https://evil.example"}, 403},
		{"Sec-Fetch-Site cross-site on a GET pop", "GET", "/pop?topic=csrf", "", []string{"Sec-Fetch-Site", "cross-site"}, 403},
		{"Sec-Fetch-Site same-site (another port)", "POST", "/jobs", job, []string{"Content-Type", "application/json", "Sec-Fetch-Site", "same-site"}, 403},
		{"the same origin", "POST", "/jobs", job, []string{"Content-Type", "application/json; charset=utf-8", "Origin", "http://" + host, "Sec-Fetch-Site", "same-origin"}, 201},
		{"curl (no Origin)", "POST", "/jobs", job, []string{"Content-Type", "application/json"}, 201},
		{"a write with no body needs no type", "POST", "/topics/csrf/kick", "", nil, 200},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if code, body, _ := ask(t, c.method, api+c.path, c.body, c.header...); code != c.want {
				t.Fatalf("status %d %s, want %d", code, body, c.want)
			}
		})
	}
	if stats := mustCall(t, 200, "GET", api+"/topics/csrf", ``); stats["total_jobs"] != 2.0 || stats["paused"] == true {
		t.Fatalf("refused requests changed the topic: %v", stats)
	}
}

// DNS rebinding: a name that resolves to 127.0.0.1 is still not this broker's.
func TestHostHeaderChecked(t *testing.T) {
	b := brokertest.Fresh(t, func(c *config.Config) { c.AllowedHosts = []string{"gmq.internal"} })
	port := b.URL[strings.LastIndex(b.URL, ":"):]
	for host, want := range map[string]int{
		"evil.example" + port: 421, "evil.example": 421, "127.0.0.1.evil.example" + port: 421,
		"localhost" + port: 200, "127.0.0.1" + port: 200, "[::1]" + port: 200, "gmq.internal": 200, "GMQ.internal" + port: 200,
	} {
		if code, body, _ := ask(t, "GET", b.URL+"/api/v1/stats", "", "Host", host); code != want {
			t.Errorf("Host %q: %d %s, want %d", host, code, body, want)
		}
	}
}

func TestFramingHeadAndBearer(t *testing.T) {
	b := brokertest.Fresh(t, func(c *config.Config) { c.Token = "s3cret" })
	code, _, h := ask(t, "GET", b.URL+"/dashboard/login", "")
	if code != 200 || h.Get("X-Frame-Options") != "DENY" || !strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
		t.Fatalf("login page: %d, framing headers %v", code, h)
	}
	for _, scheme := range []string{"Bearer", "bearer", "BEARER"} {
		if code, body, _ := ask(t, "GET", b.URL+"/api/v1/stats", "", "Authorization", scheme+" s3cret"); code != 200 {
			t.Errorf("%s: %d %s", scheme, code, body)
		}
	}
	for path, want := range map[string]int{"/healthz": 200, "/api/v1/stats": 200, "/dashboard/login": 200} {
		if code, body, _ := ask(t, "HEAD", b.URL+path, "", "Authorization", "Bearer s3cret"); code != want || body != "" {
			t.Errorf("HEAD %s: %d %q, want %d with no body", path, code, body, want)
		}
	}
	// HEAD is never a pop: a job it reserved would be seen by nobody.
	if code, body, _ := ask(t, "POST", b.URL+"/api/v1/jobs", `{"topic":"h","body":"x"}`, "Authorization", "Bearer s3cret",
		"Content-Type", "application/json"); code != 201 {
		t.Fatalf("push: %d %s", code, body)
	}
	if code, _, _ := ask(t, "HEAD", b.URL+"/api/v1/pop?topic=h", "", "Authorization", "Bearer s3cret"); code == 200 {
		t.Error("HEAD on the pop route answered 200")
	}
	if code, body, _ := ask(t, "GET", b.URL+"/api/v1/topics/h", "", "Authorization", "Bearer s3cret"); code != 200 || !strings.Contains(body, `"ready":1`) {
		t.Errorf("the job after a HEAD on pop: %d %s, want it still ready", code, body)
	}
}

// The dashboard's cookie is a session (never the token), ends at logout,
// and wrong tokens at the login form are limited per client.
func TestDashboardSession(t *testing.T) {
	b := brokertest.Fresh(t, func(c *config.Config) { c.Token = "s3cret" })
	login := func(token string) *http.Response {
		resp, err := noRedirect.PostForm(b.URL+"/dashboard/login", url.Values{"token": {token}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	resp := login("s3cret")
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 {
		t.Fatalf("login: %d %v", resp.StatusCode, resp.Cookies())
	}
	session := resp.Cookies()[0]
	if strings.Contains(session.Value, "s3cret") || session.Expires.IsZero() || session.SameSite != http.SameSiteStrictMode {
		t.Fatalf("session cookie %+v: must not hold the token, must expire", session)
	}
	cookie := session.Name + "=" + session.Value
	if code, _, _ := ask(t, "GET", b.URL+"/api/v1/stats", "", "Cookie", cookie); code != 200 {
		t.Fatalf("API with the session: %d", code)
	}
	for _, forged := range []string{session.Name + "=s3cret", "gmq_token=s3cret", session.Name + "=99999999999.x." + session.Value[strings.LastIndex(session.Value, ".")+1:]} {
		if code, _, _ := ask(t, "GET", b.URL+"/api/v1/stats", "", "Cookie", forged); code != 401 {
			t.Errorf("forged cookie %q: %d, want 401", forged, code)
		}
	}
	if code, _, h := ask(t, "POST", b.URL+"/dashboard/logout", "", "Cookie", cookie); code != http.StatusSeeOther || !strings.Contains(h.Get("Set-Cookie"), "Max-Age=0") {
		t.Fatalf("logout: %d %v", code, h)
	}
	if code, _, _ := ask(t, "GET", b.URL+"/api/v1/stats", "", "Cookie", cookie); code != 401 {
		t.Fatalf("the session after logout: %d, want 401", code)
	}
	for i := range 5 {
		if resp := login("wrong"); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("wrong token %d: %d", i, resp.StatusCode)
		}
	}
	if resp := login("wrong"); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("sixth wrong token within a minute: %d, want 429", resp.StatusCode)
	}
	// The failures never lock out the right token (issue 20: five wrong
	// logins from 127.0.0.1 locked the operator out).
	if resp := login("s3cret"); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("the right token after six wrong ones: %d, want 303", resp.StatusCode)
	}
}
