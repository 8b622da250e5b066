package upgrade

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gmq/gmq/internal/redistest"
	"github.com/gmq/gmq/pool"
	"github.com/gmq/gmq/systemtest/harness"
)

// formatFourCommit is the last commit whose broker reads store formats up
// to 4: it knows no job that waits for others.
const formatFourCommit = "3e2fcb74a3c19b710a77b4458b39b07265f722d8"

// Two versions of the broker on one Redis: while a format 4 broker runs, a
// push with after is refused (503, naming the format), since that broker
// would end a dependency without telling its dependent. Once it stops, the
// store is raised (to the newest format) and the same push waits and runs.
func TestDependenciesWaitForTheStoreFormat(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an older broker")
	}
	t.Parallel()
	old := harness.BuildAt(t, formatFourCommit)
	srv := redistest.Start(t)
	a := harness.StartBrokerOf(t, srv.URL(), old)
	b := harness.StartBroker(t, srv.URL())
	format := harness.MetaField(t, srv.URL(), "format")
	if f := format(); f != "4" {
		t.Fatalf("with a format 4 broker running, the store is at format %q", f)
	}
	b.Must(201, "POST", "/api/v1/jobs", `{"id":"up-first","topic":"up","body":"x","ttr":600}`)
	push := `{"topic":"up-next","body":"after up-first","after":["up-first"]}`
	refused := b.Must(503, "POST", "/api/v1/jobs", push)
	if msg := fmt.Sprint(refused["error"]); !strings.Contains(msg, "format 5") {
		t.Fatalf("a push with after beside a format 4 broker: %v, want it to name the format", refused)
	}
	if err := a.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	a.ExitsCleanly(t, time.Minute, "SIGTERM")
	harness.WaitUntil(t, "the store raised to the newest format", func() bool { return format() == strconv.Itoa(pool.StoreFormat) })
	var id string
	harness.WaitUntil(t, "the broker writes format 5 (its next announce) and takes the push", func() bool {
		got, err := b.Do("POST", "/api/v1/jobs", push)
		id, _ = got.Body["id"].(string)
		return err == nil && got.Code == 201
	})
	j := b.Must(200, "GET", "/api/v1/pop?topic=up&timeout=30", ``)
	b.Must(200, "POST", "/api/v1/jobs/"+j["id"].(string)+"/ack", ``)
	if next := b.Must(200, "GET", "/api/v1/pop?topic=up-next&timeout=30", ``); next["id"] != id {
		t.Fatalf("the dependent: %v, want %s", next, id)
	}
}
