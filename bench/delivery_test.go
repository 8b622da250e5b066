package bench

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gmq/gmq/config"
	"github.com/gmq/gmq/job"
)

// BenchmarkDeliveryVsBare is HTTP push delivery's throughput against the
// endpoint's own ceiling, in one run: a bare net/http endpoint (it reads
// the body and answers 200) is sent b.N requests of a delivery's size by
// 16 goroutines of a plain Go client (the bare rate, before and after),
// and one broker delivers b.N jobs to it with [webhook] max_in_flight 16
// (from the moment deliver_to is set on a topic already holding them
// until the last is acked). Its ratio is gmq's rate over the bare mean;
// docs/PERFORMANCE.md has the figures:
//
//	go test -run '^$' -bench DeliveryVsBare -benchtime 20000x ./bench
func BenchmarkDeliveryVsBare(b *testing.B) {
	const inFlight = 16
	var got atomic.Int64
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		got.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	defer endpoint.Close()
	br, _ := newBrokerOn(b, redis, func(c *config.Config) {
		c.WebhookAllowHosts, c.WebhookMaxInFlight, c.WebhookScan = []string{"127.0.0.1"}, inFlight, 10*time.Millisecond
		c.BeanstalkAddr, c.RPCAddr, c.KestrelAddr, c.KestrelTextAddr, c.KestrelThriftAddr = "", "", "", "", ""
	})
	// A delivery's body, as the broker sends one (a small JSON body).
	payload := `{"id":"123456","internal_id":123456,"topic":"hooks","body":{"n":1},"attempt":1,"failures":0,"priority":1024,"ttr":60,"created":"2026-12-02T10:00:00.123Z","token":"123456.1"}`
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: inFlight}}
	bare := func() float64 {
		var next atomic.Int64
		var wg sync.WaitGroup
		start := time.Now()
		for range inFlight {
			wg.Go(func() {
				for next.Add(1) <= int64(b.N) {
					resp, err := client.Post(endpoint.URL, "application/json", strings.NewReader(payload))
					if err != nil {
						b.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			})
		}
		wg.Wait()
		return float64(b.N) / time.Since(start).Seconds()
	}
	fillWith(b, br.Pool, b.N, job.Spec{Topic: "hooks", Body: `{"n":1}`, BodyJSON: true, TTR: time.Minute, Priority: 1024})
	b.ResetTimer()
	first := bare()
	got.Store(0)
	start := time.Now()
	if err := br.Dispatcher.Topic("hooks").SetConfig(context.Background(), job.TopicConfig{job.DeliverTo: endpoint.URL}); err != nil {
		b.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Minute); ; time.Sleep(10 * time.Millisecond) {
		s, err := br.Dispatcher.Topic("hooks").Stats(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		if s.Deletes >= int64(b.N) {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d jobs delivered in 10 minutes", s.Deletes, b.N)
		}
	}
	gmq := float64(b.N) / time.Since(start).Seconds()
	again := bare()
	b.ReportMetric((first+again)/2, "bare-requests/s")
	b.ReportMetric(gmq, "gmq-deliveries/s")
	b.ReportMetric(gmq/((first+again)/2), "ratio")
	b.ReportMetric(0, "ns/op")
}
