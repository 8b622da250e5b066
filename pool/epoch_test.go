package pool

import (
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/gmq/gmq/job"
)

// Job numbers stay above every number handed out before, whatever Redis
// forgot: the whole store (FLUSHALL: a restart without persistence), or
// just the counter's last steps (an older snapshot, a replica that lagged:
// the counter set back). Each case takes its numbers through a new pool, as
// a restarted broker would, with no block of numbers in hand.
func TestNumbersNeverRepeat(t *testing.T) {
	first, ctx := newPool(t)
	var highest uint64
	for range 5 {
		highest = max(highest, mustPush(t, first, ctx, job.Spec{Topic: "t", Body: "x"}))
	}
	for _, loss := range []struct {
		name string
		do   []string
	}{
		{"the whole store", []string{"FLUSHALL"}},
		{"the counter's last steps", []string{"SET", "gmq:ids", "3"}},
		{"nothing", []string{"PING"}},
	} {
		t.Run(loss.name, func(t *testing.T) {
			if _, err := redis.Do(loss.do...); err != nil {
				t.Fatal(err)
			}
			time.Sleep(5 * time.Millisecond) // the floor grows 237 a ms: past the last block
			p, ctx := openPool(t, rueidis.ClientOption{InitAddress: []string{redis.Addr}}, Options{})
			id := mustPush(t, p, ctx, job.Spec{Topic: "t", Body: "x"})
			if id <= highest {
				t.Fatalf("number %d after losing %s, not above the %d handed out before", id, loss.name, highest)
			}
			if id >= 1<<53 {
				t.Fatalf("number %d is past 2^53", id)
			}
			highest = id
		})
	}
}

// The floor reaches 2^53 no sooner than 2100 for every bucket count.
func TestIDFloorRate(t *testing.T) {
	for _, buckets := range []int{1, 4, 16, 1024} {
		r := idFloorRate(buckets)
		if end := uint64(idFloorEnd-idFloorStart) * uint64(r) * uint64(buckets); end > 1<<53 || r < 1 {
			t.Errorf("%d buckets: %d a ms reaches %d by 2100, past 2^53", buckets, r, end)
		}
	}
	if r := idFloorRate(16); r != 237 {
		t.Errorf("16 buckets: %d a ms, the docs say 237", r)
	}
}
