package broker_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
	"github.com/gmq/gmq/internal/redistest"
)

// [redis] wait_replicas end to end: with the replica frozen, an HTTP push is
// a 503 that says the replica did not confirm it, beanstalkd's put an
// INTERNAL_ERROR and kestrel's set a SERVER_ERROR, while pops go on; once
// the replica is back, pushes are answered again.
func TestWaitReplicasFrontEnds(t *testing.T) {
	master := redistest.Start(t)
	replica := redistest.StartReplica(t, master)
	b := brokertest.Start(t, master, func(c *config.Config) {
		c.WaitReplicas, c.WaitTimeout = 1, 300*time.Millisecond
	})
	api := b.URL + "/api/v1"
	for range 2 {
		mustCall(t, 201, "POST", api+"/jobs", `{"topic":"rep","body":"x"}`)
	}

	// Frozen until the checks are done, however long a loaded machine takes
	// over them (a fixed pause could end before the last one).
	thaw, err := replica.Freeze()
	if err != nil {
		t.Fatal(err)
	}
	defer thaw() // a failed check: let the replica go on for the clean-up
	code, out := brokertest.Call(t, "POST", api+"/jobs", `{"topic":"rep","body":"unconfirmed"}`)
	if reason, _ := out["error"].(string); code != 503 || !strings.Contains(reason, "0 of the 1 replicas") {
		t.Fatalf("push with the replica frozen: %d %v", code, out)
	}
	if got := brokertest.Lines(t, b.BeanstalkAddr, "use rep\r\nput 1 0 60 1\r\nx\r\n", 2); got[1] != "INTERNAL_ERROR\r\n" {
		t.Fatalf("beanstalkd put with the replica frozen: %q", got)
	}
	if got := brokertest.Lines(t, b.KestrelAddr, "set rep 0 0 1\r\nx\r\n", 1); !strings.HasPrefix(got[0], "SERVER_ERROR") {
		t.Fatalf("kestrel set with the replica frozen: %q", got)
	}
	mustCall(t, 200, "GET", api+"/pop?topic=rep&timeout=1", ``)
	if err := thaw(); err != nil {
		t.Fatal(err)
	}
	// The thawed replica catches up, then confirms within wait_timeout
	// (300 ms): a loaded machine may take longer over the first pushes.
	brokertest.Eventually(t, "a push confirmed once the replica is back", func() bool {
		code, out := brokertest.Call(t, "POST", api+"/jobs", `{"topic":"rep","body":"confirmed"}`)
		if code != 201 && code != 503 {
			t.Fatalf("push with the replica back: %d %v", code, out)
		}
		return code == 201
	})
}
