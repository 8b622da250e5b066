package metrics_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
)

// The metrics' own listener applies the API's Host rule: on loopback it
// answers only to loopback names and [web] allowed_hosts, so a page on a
// DNS name rebound to 127.0.0.1 cannot read it (issue 20: it answered any
// Host).
func TestMetricsListenerHostRule(t *testing.T) {
	b := brokertest.Fresh(t, func(c *config.Config) {
		c.MetricsAddr = "127.0.0.1:0"
		c.AllowedHosts = []string{"gmq.internal"}
	})
	addr := b.Broker.Addr("metrics")
	for _, tt := range []struct {
		host string
		want int
	}{
		{addr, 200},
		{"localhost", 200},
		{"gmq.internal:9100", 200},
		{"[::1]:9100", 200},
		{"evil.example", http.StatusMisdirectedRequest},
		{"evil.example:" + strings.Split(addr, ":")[1], http.StatusMisdirectedRequest},
		{"127.0.0.1.evil.example", http.StatusMisdirectedRequest},
	} {
		req, err := http.NewRequest("GET", "http://"+addr+"/metrics", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = tt.host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("Host %q: %d, want %d", tt.host, resp.StatusCode, tt.want)
		}
		if tt.want == 200 && !strings.Contains(string(body), "gmq_store_up") {
			t.Errorf("Host %q: no metrics in the answer", tt.host)
		}
	}
}
