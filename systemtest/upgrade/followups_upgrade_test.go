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

// formatThreeCommit is the last commit whose broker reads store formats up
// to 3: its timers know no follow-ups.
const formatThreeCommit = "9a33dfda05d92fd85293b24502190f8cb06e83d5"

// Two versions of the broker on one Redis: while a format 3 broker runs,
// an ack with follow-ups is refused whole (503, naming the format; the job
// stays reserved), since that broker's timer would not push them. Once it
// stops, the store is raised to 4 and the same ack goes through, its
// follow-up pushed once; a plain ack works throughout.
func TestFollowUpsWaitForTheStoreFormat(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an older broker")
	}
	t.Parallel()
	old := harness.BuildAt(t, formatThreeCommit)
	srv := redistest.Start(t)
	a := harness.StartBrokerOf(t, srv.URL(), old) // first: the store takes format 3
	b := harness.StartBroker(t, srv.URL())
	format := harness.MetaField(t, srv.URL(), "format")
	if f := format(); f != "3" {
		t.Fatalf("with a format 3 broker running, the store is at format %q", f)
	}
	b.Must(201, "POST", "/api/v1/jobs", `{"id":"up-1","topic":"up","body":"x","ttr":600}`)
	b.Must(201, "POST", "/api/v1/jobs", `{"id":"up-2","topic":"up","body":"y","ttr":600}`)
	b.Must(200, "POST", "/api/v1/pop", `{"topics":["up"],"count":2}`)
	ack := `{"push":[{"topic":"up-next","body":"after up-1"}]}`
	refused := b.Must(503, "POST", "/api/v1/jobs/up-1/ack", ack)
	if msg := fmt.Sprint(refused["error"]); !strings.Contains(msg, "format 4") {
		t.Fatalf("an ack with follow-ups beside a format 3 broker: %v, want it to name the format", refused)
	}
	if j := b.Must(200, "GET", "/api/v1/jobs/up-1", ``); j["state"] != "reserved" {
		t.Fatalf("the job after the refused ack: %v", j)
	}
	b.Must(200, "POST", "/api/v1/jobs/up-2/ack", ``) // a plain ack works meanwhile

	if err := a.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	a.ExitsCleanly(t, time.Minute, "SIGTERM")
	harness.WaitUntil(t, "the store raised to the newest format", func() bool { return format() == strconv.Itoa(pool.StoreFormat) })
	var pushed []any
	harness.WaitUntil(t, "the broker writes format 4 (its next announce) and takes the follow-ups", func() bool {
		got, err := b.Do("POST", "/api/v1/jobs/up-1/ack", ack)
		pushed, _ = got.Body["pushed"].([]any)
		return err == nil && got.Code == 200
	})
	next := b.Must(200, "GET", "/api/v1/pop?topic=up-next&timeout=30", ``)
	if len(pushed) != 1 || next["id"] != pushed[0] || next["body"] != "after up-1" {
		t.Fatalf("the follow-up: %v, the ack said %v", next, pushed)
	}
}
