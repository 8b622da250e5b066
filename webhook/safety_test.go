package webhook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gmq/gmq/broker"
	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
	"github.com/gmq/gmq/job"
)

// call is an API call with the token (none when token is "").
func call(t *testing.T, token, method, url, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("%s %s: %d %s", method, url, resp.StatusCode, data)
	}
	return resp.StatusCode, out
}

// TestDeliverySetAtRunTime: only the token's holder may point a topic at a
// URL, only at a host allow_hosts lists, the secret never shows, and a
// change through the API is taken up (and undone) by the brokers.
func TestDeliverySetAtRunTime(t *testing.T) {
	e := newEndpoint(t, func(_ int, _ map[string]any, w http.ResponseWriter) { w.WriteHeader(200) })
	const token = "a-long-enough-token-for-the-test-0123456789"
	b := brokertest.Fresh(t, func(c *config.Config) {
		c.WebhookAllowHosts, c.WebhookScan, c.Token = []string{"127.0.0.1"}, 20*time.Millisecond, token
	})
	settings := b.URL + "/api/v1/topics/hooks/config"
	for _, tc := range []struct {
		token, body string
		status      int
		says        string
	}{
		{token, `{"deliver_to": "http://evil.example.com/x"}`, 400, `host "evil.example.com" port 80 is not in conf.ini's [webhook] allow_hosts (127.0.0.1)`},
		{token, `{"deliver_to": "http://localhost/x"}`, 400, `host "localhost" port 80 is not in`},
		{token, `{"deliver_to": "gopher://127.0.0.1/x"}`, 400, "want an http or https URL"},
		{token, `{"deliver_secret": "hunter2"}`, 400, "starting whsec_"},
		{token, `{"deliver_timeout": 60}`, 400, ""}, // no deliver_to: nothing to check against
		{token, `{"deliver_to": "` + e.srv.URL + `", "deliver_timeout": 60}`, 400, "not under [jobs] default_ttr 1m0s"},
		{"", `{"deliver_to": "` + e.srv.URL + `"}`, 401, ""},
	} {
		code, got := call(t, tc.token, "PUT", settings, tc.body)
		if tc.says == "" && tc.status == 400 {
			if code != 200 {
				t.Fatalf("PUT %s: %d %v", tc.body, code, got)
			}
			continue
		}
		if code != tc.status || !strings.Contains(fmt.Sprint(got["error"]), tc.says) || strings.Contains(fmt.Sprint(got), "hunter2") {
			t.Fatalf("PUT %s: %d %v, want %d saying %q", tc.body, code, got, tc.status, tc.says)
		}
	}
	call(t, token, "PUT", settings, `{"deliver_timeout": null}`)
	code, got := call(t, token, "PUT", settings, `{"deliver_to": "`+e.srv.URL+`", "deliver_secret": "`+secret+`"}`)
	if code != 200 {
		t.Fatalf("PUT deliver_to: %d %v", code, got)
	}
	for _, layer := range []string{"settings", "run"} {
		if s := got[layer].(map[string]any); s["deliver_secret"] != "***" || s["deliver_to"] != e.srv.URL {
			t.Fatalf("%s shows %v", layer, s)
		}
	}
	push := func() string {
		code, got := call(t, token, "POST", b.URL+"/api/v1/jobs", `{"topic":"hooks","body":"x"}`)
		if code != 201 {
			t.Fatalf("push: %d %v", code, got)
		}
		return got["id"].(string)
	}
	id := push()
	brokertest.Eventually(t, "the job delivered", func() bool {
		code, _ := call(t, token, "GET", b.URL+"/api/v1/jobs/"+id, "")
		return code == 404
	})
	e.check()
	_, topic := call(t, token, "GET", b.URL+"/api/v1/topics/hooks", "")
	if s := topic["settings"].(map[string]any); s["deliver_secret"] != "***" {
		t.Fatalf("the topic's view shows %v", s)
	}
	if d, ok := topic["delivery"].(map[string]any); !ok || d["acked"] != 1.0 || d["sent"] != 1.0 {
		t.Fatalf("the topic's view shows its deliveries as %v", topic["delivery"])
	}
	code, _ = call(t, token, "PUT", settings, `{"deliver_to": null}`)
	if code != 200 {
		t.Fatalf("PUT deliver_to null: %d", code)
	}
	brokertest.Eventually(t, "the broker no longer delivering the topic", func() bool {
		return len(b.Broker.Deliverer().Running()) == 0
	})
	id = push()
	if code, j := call(t, token, "GET", b.URL+"/api/v1/jobs/"+id, ""); code != 200 || j["state"] != "ready" {
		t.Fatalf("a job pushed once deliver_to was removed: %d %v", code, j)
	}
}

// TestDeliveryWithoutToken: with no [web] token, deliver_to and
// deliver_secret are conf.ini's alone.
func TestDeliveryWithoutToken(t *testing.T) {
	b := brokertest.Fresh(t, func(c *config.Config) { c.WebhookAllowHosts = []string{"127.0.0.1"} })
	for _, body := range []string{`{"deliver_to": "http://127.0.0.1:9/x"}`, `{"deliver_secret": "` + secret + `"}`} {
		code, got := call(t, "", "PUT", b.URL+"/api/v1/topics/hooks/config", body)
		if code != 403 || !strings.Contains(fmt.Sprint(got["error"]), "only by the holder of [web] token") {
			t.Fatalf("PUT %s: %d %v", body, code, got)
		}
	}
	if code, _ := call(t, "", "PUT", b.URL+"/api/v1/topics/hooks/config", `{"deliver_timeout": 5}`); code != 200 {
		t.Fatalf("deliver_timeout: %d", code)
	}
	// A change made while a token was set is undone without one.
	if code, got := call(t, "", "PUT", b.URL+"/api/v1/topics/hooks/config", `{"deliver_to": null, "deliver_secret": null}`); code != 200 {
		t.Fatalf("deliver_to null: %d %v", code, got)
	}
}

// TestDialRefusesRebinding: a host allowed by name that resolves to a
// loopback address is refused when dialled, and its job fails saying so;
// the endpoint is never reached.
func TestDialRefusesRebinding(t *testing.T) {
	e := newEndpoint(t, func(_ int, _ map[string]any, w http.ResponseWriter) { w.WriteHeader(200) })
	_, port, _ := net.SplitHostPort(e.srv.Listener.Addr().String())
	b := brokertest.Fresh(t, func(c *config.Config) {
		c.WebhookAllowHosts, c.WebhookScan = []string{"localhost"}, 20*time.Millisecond
		c.Topics = map[string]job.TopicConfig{"hooks": {job.DeliverTo: "http://localhost:" + port + "/", "max_attempts": "1"}}
	})
	id := push(t, b, "hooks", `"x"`)
	brokertest.Eventually(t, "the job dead", func() bool {
		_, j := jobOf(t, b, id)
		return j["state"] == "dead"
	})
	_, j := jobOf(t, b, id)
	if err := fmt.Sprint(j["last_error"]); !strings.Contains(err, "refused to connect to") || !strings.Contains(err, "allow_hosts") {
		t.Fatalf("its last error: %s", err)
	}
	if n := e.count.Load(); n != 0 {
		t.Fatalf("the endpoint was reached %d times", n)
	}
}

// TestReloadKeepsStartingAllowHosts: [webhook] allow_hosts takes effect
// at a start, so a reload that lists a new host and points a topic at it
// is refused (it would write a deliver_to this broker refuses to call).
func TestReloadKeepsStartingAllowHosts(t *testing.T) {
	brokertest.Redis().Flush(t)
	cfg := config.Default()
	cfg.Buckets, cfg.RedisURL, cfg.ShutdownTimeout = 4, brokertest.Redis().URL(), time.Second
	cfg.HTTP, cfg.BeanstalkAddr, cfg.RPCAddr, cfg.KestrelAddr = "127.0.0.1:0", "", "", ""
	cfg.WebhookAllowHosts = []string{"127.0.0.1"}
	next := cfg
	next.WebhookAllowHosts = []string{"127.0.0.1", "hooks.example.com"}
	next.Topics = map[string]job.TopicConfig{"hooks": {job.DeliverTo: "https://hooks.example.com/x"}}
	b, err := broker.New(t.Context(), cfg, broker.Options{Version: "test", Reload: func() (config.Config, error) { return next, nil }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	defer b.Run(ctx) // started and stopped at once: its listeners and store closed
	err = b.Reload(t.Context())
	if err == nil || !strings.Contains(err.Error(), "the allow_hosts this broker started with") {
		t.Fatalf("reload: %v", err)
	}
	l, err := b.Dispatcher().Topic("hooks").Config(t.Context())
	if err != nil || l.Effective[job.DeliverTo] != "" {
		t.Fatalf("the topic's settings after the refused reload: %v %v", l.Effective, err)
	}
}

// TestDeliveryObeysListedPorts: the attack. allow_hosts lists
// 127.0.0.1 on one port and a name (localhost, resolving to 127.0.0.1)
// without a port; a token holder points a topic at the name on another
// port. The URL check lets it pass (a name listed without a port allows
// any), but the connect-time check must not: 127.0.0.1 is listed on its
// own port only. The other port's listener is never reached, and the job
// fails saying why; the listed port is still delivered to.
func TestDeliveryObeysListedPorts(t *testing.T) {
	open := newEndpoint(t, func(_ int, _ map[string]any, w http.ResponseWriter) { w.Write([]byte(`{"from":"open"}`)) })
	other := newEndpoint(t, func(_ int, _ map[string]any, w http.ResponseWriter) { w.Write([]byte(`{"from":"internal"}`)) })
	_, openPort, _ := net.SplitHostPort(open.srv.Listener.Addr().String())
	_, otherPort, _ := net.SplitHostPort(other.srv.Listener.Addr().String())
	const token = "a-long-enough-token-for-the-test-0123456789"
	b := brokertest.Fresh(t, func(c *config.Config) {
		c.WebhookAllowHosts, c.WebhookScan, c.Token = []string{"127.0.0.1:" + openPort, "localhost"}, 20*time.Millisecond, token
	})
	for _, tc := range []struct {
		topic, url string
		put        int    // the PUT's status
		state      string // the job's once done: completed, or dead
		says       string // in its result or its last error
	}{
		{"name-other-port", "http://localhost:" + otherPort + "/", 200, "dead", "refused to connect to 127.0.0.1:" + otherPort},
		{"name-listed-port", "http://localhost:" + openPort + "/", 200, "completed", "open"},
		{"address-other-port", "http://127.0.0.1:" + otherPort + "/", 400, "", `host "127.0.0.1" port ` + otherPort + " is not in"},
	} {
		t.Run(tc.topic, func(t *testing.T) {
			code, got := call(t, token, "PUT", b.URL+"/api/v1/topics/"+tc.topic+"/config",
				`{"deliver_to": "`+tc.url+`", "deliver_secret": "`+secret+`", "keep_completed": 3600, "max_attempts": 1}`)
			if code != tc.put || tc.put != 200 && !strings.Contains(fmt.Sprint(got["error"]), tc.says) {
				t.Fatalf("PUT deliver_to %s: %d %v, want %d", tc.url, code, got, tc.put)
			}
			if tc.put != 200 {
				return
			}
			code, got = call(t, token, "POST", b.URL+"/api/v1/jobs", `{"topic":"`+tc.topic+`","body":"x"}`)
			if code != 201 {
				t.Fatalf("push: %d %v", code, got)
			}
			id := got["id"].(string)
			var j map[string]any
			brokertest.Eventually(t, "the job done", func() bool {
				_, j = call(t, token, "GET", b.URL+"/api/v1/jobs/"+id, "")
				return j["state"] == "completed" || j["state"] == "dead"
			})
			if s := fmt.Sprint(j["result"], j["last_error"]); j["state"] != tc.state || !strings.Contains(s, tc.says) {
				t.Fatalf("the job: %v, want %s with %q in its result or error", j, tc.state, tc.says)
			}
		})
	}
	if n := other.count.Load(); n != 0 {
		t.Fatalf("the port not listed was reached %d times", n)
	}
	open.check()
}
