package text_test

import (
	"testing"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
	"github.com/gmq/gmq/kestrel/internal/kestreltest"
	kestreltext "github.com/gmq/gmq/kestrel/text"
)

func TestMain(m *testing.M) { brokertest.Main(m) }

// start runs a fresh broker (a real Redis, flushed) and a text protocol
// server over its dispatcher on 127.0.0.1:0, with the defaults the broker
// gives kestrel's port, changed by tweak (may be nil). It returns the
// broker and the server's address; both stop when the test ends.
func start(t *testing.T, tweak func(*kestreltext.Options)) (*brokertest.Broker, string) {
	t.Helper()
	b := brokertest.Fresh(t, nil)
	cfg := config.Default()
	opts := kestreltext.Options{Version: "test", MaxItemSize: cfg.MaxBody, MaxRequest: cfg.MaxRequestBody,
		MaxOpenReads: cfg.KestrelMaxOpenReads, DefaultTTR: cfg.DefaultTTR, Options: kestreltest.Options(t)}
	if tweak != nil {
		tweak(&opts)
	}
	return b, kestreltest.Serve(t, kestreltext.New(b.Dispatcher, opts))
}

// dial is a raw text-protocol connection for transcripts.
func dial(t *testing.T, addr string) *kestreltest.Wire { return kestreltest.Dial(t, addr) }
