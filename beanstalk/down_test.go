package beanstalk_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
	"github.com/gmq/gmq/internal/redistest"
)

// TestReservationKeptWhileRedisIsDown: a release, bury, touch or delete of
// a job this connection holds that the store cannot settle (Redis down:
// INTERNAL_ERROR, retry) leaves the job held, so its retry once Redis is
// back goes through; only the truth is NOT_FOUND.
func TestReservationKeptWhileRedisIsDown(t *testing.T) {
	srv := redistest.Start(t)
	b := brokertest.Start(t, srv, func(c *config.Config) { c.RequestTimeout = 500 * time.Millisecond })
	w := dial(t, b.BeanstalkAddr)
	ids := make([]uint64, 4)
	for i := range ids {
		ids[i] = w.put(0, 0, 120, "held")
	}
	for range ids {
		if got := w.do("reserve-with-timeout 0\r\n"); !strings.HasPrefix(got, "RESERVED ") {
			t.Fatalf("reserve: %q", got)
		}
	}
	cmds := []string{"release %d 0 0\r\n", "bury %d 0\r\n", "touch %d\r\n", "delete %d\r\n"}
	wants := []string{"RELEASED\r\n", "BURIED\r\n", "TOUCHED\r\n", "DELETED\r\n"}
	srv.Terminate() // its AOF written out: the jobs come back with it
	for i, id := range ids {
		if got := w.do(fmt.Sprintf(cmds[i], id)); got != "INTERNAL_ERROR\r\n" {
			t.Fatalf("%q with Redis down: %q, want INTERNAL_ERROR", fmt.Sprintf(cmds[i], id), got)
		}
	}
	if err := srv.StartAgain(); err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		send := fmt.Sprintf(cmds[i], id)
		brokertest.Eventually(t, send+" once Redis is back", func() bool { return w.do(send) == wants[i] })
	}
}
