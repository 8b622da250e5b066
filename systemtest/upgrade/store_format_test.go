package upgrade

import (
	"fmt"
	"log/slog"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gmq/gmq/internal/redistest"
	"github.com/gmq/gmq/pool"
	"github.com/gmq/gmq/systemtest/harness"
)

// The store's format, with real brokers (pool/format.go): a broker records
// itself in gmq:meta while it runs and removes its record when it stops; a
// broker never starts on a store whose format is newer than it reads, and
// says which versions meet.
func TestStoreFormatWithBrokers(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	b := harness.StartBroker(t, srv.URL())
	ctx := redistest.Context(t)
	client, err := pool.Dial(ctx, srv.URL(), 5*time.Second, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	brokers := func() []string {
		keys, err := client.Do(ctx, client.B().Hkeys().Key("gmq:meta").Build()).AsStrSlice()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, k := range keys {
			if strings.HasPrefix(k, "broker ") {
				out = append(out, k)
			}
		}
		return out
	}
	if got, err := client.Do(ctx, client.B().Hget().Key("gmq:meta").Field("format").Build()).ToString(); err != nil || got != strconv.Itoa(pool.StoreFormat) {
		t.Fatalf("format %q (%v), want %d", got, err, pool.StoreFormat)
	}
	if got := brokers(); len(got) != 1 {
		t.Fatalf("%d broker records, want 1", len(got))
	}
	if err := b.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	b.ExitsCleanly(t, time.Minute, "SIGTERM")
	if got := brokers(); len(got) != 0 {
		t.Fatalf("%d broker records after a clean stop, want 0", len(got))
	}

	if err := client.Do(ctx, client.B().Hset().Key("gmq:meta").FieldValue().FieldValue("format", "99").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(harness.Binary, "start", "-c", b.Conf, "--http", b.Addr, "--beanstalk", b.Beanstalk, "--rpc", b.RPC,
		"--kestrel", b.Kestrel, "--redis", b.Redis).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "store format 99") || !strings.Contains(string(out), fmt.Sprintf("reads formats up to %d", pool.StoreFormat)) {
		t.Fatalf("start on a store of format 99: %v\n%s", err, out)
	}
}
