package web_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/gmq/gmq/job"
	"github.com/gmq/gmq/web"
)

// lockedBuffer is a log sink safe for the server's goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A probe of /readyz answered 503 while the broker is quiescent is what the
// probe asked for, not a fault: it is not logged as a warning (a probe
// every 2 s through a drain would log every 2 s).
func TestReadyzUnreadyIsNotAWarning(t *testing.T) {
	b := broker(t)
	var logged lockedBuffer
	log := slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelInfo}))
	srv := httptest.NewServer(web.New(b.Dispatcher, web.Options{Metrics: http.NotFoundHandler(), OpenAPI: []byte("x"), Log: log}).Handler())
	t.Cleanup(srv.Close)
	if err := b.Dispatcher.Status().SetBroker(context.Background(), "this", job.Quiescent); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Dispatcher.Status().SetBroker(context.Background(), "this", job.Up) })
	for range 3 {
		resp, err := http.Get(srv.URL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("/readyz while quiescent: %d, want 503", resp.StatusCode)
		}
	}
	if strings.Contains(logged.String(), "/readyz") {
		t.Fatalf("a 503 of /readyz was logged at info or above:\n%s", logged.String())
	}
}
