package bench

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkHTTPPushVsBare is the anchor of issue 22's HTTP goal: the same
// clients (-clients, 64 by default) push b.N jobs, one a request, to a
// bare net/http handler, then to gmq, then to the bare handler again, in
// one run. The bare handler does what any JSON endpoint must (read the
// body, decode it, answer 201 with an id) and stores nothing. It reports
// each rate and gmq's ratio to the bare handler's mean; docs/PERFORMANCE.md
// has the figures:
//
//	go test -run '^$' -bench HTTPPushVsBare -benchtime 20000x ./bench
func BenchmarkHTTPPushVsBare(b *testing.B) {
	var ids atomic.Int64
	bare := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var job map[string]any
		if err := json.NewDecoder(r.Body).Decode(&job); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"id":"` + strconv.FormatInt(ids.Add(1), 10) + `"}`))
	}))
	defer bare.Close()
	br, c := newBroker(b)
	rate := func(url string) float64 {
		start := time.Now()
		parallel(b, func() error { _, err := post(c, url, pushPayload, http.StatusCreated); return err })
		return float64(b.N) / time.Since(start).Seconds()
	}
	b.ResetTimer()
	first := rate(bare.URL + "/api/v1/jobs")
	gmq := rate(br.URL + "/api/v1/jobs")
	again := rate(bare.URL + "/api/v1/jobs")
	b.ReportMetric((first+again)/2, "bare-jobs/s")
	b.ReportMetric(gmq, "gmq-jobs/s")
	b.ReportMetric(gmq/((first+again)/2), "ratio")
	b.ReportMetric(0, "ns/op")
}
