package brokers

import (
	"fmt"
	"testing"
	"time"

	"github.com/gmq/gmq/internal/redistest"
	"github.com/gmq/gmq/systemtest/harness"
)

// A job's end that others wait for hands them over at once, not at its
// bucket's timer's next round: with [bucket] max_sleep at its longest (a
// minute), a dependent acked through one broker and a batch finished
// through it are popped from another within a long poll far shorter than
// that sleep; each wait is a condition (a pop that answers), and the
// timers, idle, would otherwise sleep past it.
func TestEndsHandedOverAtOnce(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	conf := "[redis]\nbuckets = 4\n[bucket]\nmax_sleep = 1m\n"
	a, b := harness.StartBroker(t, srv.URL()), harness.StartBroker(t, srv.URL())
	a.RestartWith("", conf)
	b.RestartWith("", conf)
	for round := range 3 { // each round after the timers went back to sleep
		extract := fmt.Sprintf("nx-extract-%d", round)
		a.Must(201, "POST", "/api/v1/jobs", `{"id":"`+extract+`","topic":"nx-extract","body":"x","ttr":60}`)
		a.Must(201, "POST", "/api/v1/jobs", `{"id":"nx-load-`+fmt.Sprint(round)+`","topic":"nx-load","body":"y","ttr":60,"after":["`+extract+`"]}`)
		batch := a.Must(201, "POST", "/api/v1/batches", `{"jobs":[{"topic":"nx-part","body":"p","ttr":60}],"on_complete":{"topic":"nx-done","body":"d"}}`)["id"]
		popAckHTTP(t, a, "nx-extract", ``)
		popAckHTTP(t, a, "nx-part", ``)
		start := time.Now()
		for _, topic := range []string{"nx-load", "nx-done"} {
			j := b.Must(200, "GET", "/api/v1/pop?topic="+topic+"&timeout=20", ``)
			b.Must(200, "POST", fmt.Sprintf("/api/v1/jobs/%v/ack", j["id"]), fmt.Sprintf(`{"attempt":%v}`, j["attempt"]))
		}
		t.Logf("round %d: the dependent and batch %v's callback came %v after their ends", round, batch, time.Since(start))
	}
}
