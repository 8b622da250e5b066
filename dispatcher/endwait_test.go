package dispatcher_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
	"github.com/gmq/gmq/job"
)

// At [jobs] max_waiting, a wait for a job's end is refused
// (job.ErrTooManyWaiting), but a push's wait, which asked for room before
// it stored its job, is a wait that saw no end: its job is stored, and the
// pusher is told so (HTTP's 202), not refused.
func TestWaitEndAtMaxWaiting(t *testing.T) {
	b := brokertest.Fresh(t, func(c *config.Config) { c.MaxWaiting = 1 })
	ctx := context.Background()
	id := strconv.FormatUint(push(t, b, job.Spec{Topic: "w", Body: "x", TTR: time.Minute}), 10)
	held := make(chan error, 1)
	pctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { _, err := popOne(b.Dispatcher, pctx, []string{"idle"}, time.Minute); held <- err }()
	waiting(t, b, "idle", 1)
	if end, err := b.Dispatcher.WaitEnd(ctx, id, time.Second, false); !errors.Is(err, job.ErrTooManyWaiting) {
		t.Errorf("a wait at max_waiting: %+v %v, want job.ErrTooManyWaiting", end, err)
	}
	if end, err := b.Dispatcher.WaitEnd(ctx, id, time.Second, true); end != nil || err != nil {
		t.Errorf("a push's wait at max_waiting: %+v %v, want no end and no error", end, err)
	}
	stop()
	<-held
}
