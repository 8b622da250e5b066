package upgrade

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gmq/gmq/internal/redistest"
	"github.com/gmq/gmq/systemtest/harness"
)

// formatFiveCommit is the last commit whose broker reads store formats up
// to 5: it knows no batch.
const formatFiveCommit = "2c35fbfa54b3665f2f9926da648721277e699d90"

// Two versions of the broker on one Redis: while a format 5 broker runs,
// a batch is refused (503, naming the format), since that broker would end
// a member without telling its batch; once it stops, the store is raised
// and the same batch is made.
func TestBatchesWaitForTheStoreFormat(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an older broker")
	}
	t.Parallel()
	old := harness.BuildAt(t, formatFiveCommit)
	srv := redistest.Start(t)
	a := harness.StartBrokerOf(t, srv.URL(), old)
	b := harness.StartBroker(t, srv.URL())
	format := harness.MetaField(t, srv.URL(), "format")
	if f := format(); f != "5" {
		t.Fatalf("with a format 5 broker running, the store is at format %q", f)
	}
	create := `{"jobs":[{"topic":"fmt-b","body":"x"}]}`
	if refused := b.Must(503, "POST", "/api/v1/batches", create); !strings.Contains(fmt.Sprint(refused["error"]), "format 6") {
		t.Fatalf("a batch beside a format 5 broker: %v, want it to name the format", refused)
	}
	if err := a.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	a.ExitsCleanly(t, time.Minute, "SIGTERM")
	harness.WaitUntil(t, "the broker at format 6 takes the batch", func() bool {
		got, err := b.Do("POST", "/api/v1/batches", create)
		return err == nil && got.Code == 201
	})
}
