package pool

import (
	"fmt"
	"strconv"
	"time"

	"github.com/gmq/gmq/job"
	"github.com/gmq/gmq/lua"
)

// setName is the per-topic sorted set that holds jobs in state s, by the
// scripts' name (lua.States: a waiting job's is "after").
func setName(s job.State) string {
	for _, st := range lua.States {
		if st.State == s && st.Set != "" {
			return st.Set
		}
	}
	return s.String()
}

// millis rounds a duration up to whole milliseconds, the unit scripts keep,
// so that a delay is never shortened.
func millis(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// epochMillis is t in Unix milliseconds, rounded up (an expiry is never
// brought forward); 0 for the zero time.
func epochMillis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	ms := t.UnixMilli()
	if t.After(time.UnixMilli(ms)) {
		ms++
	}
	return max(ms, 1)
}

// member is the id as stored in Redis: zero-padded so that members of equal
// priority sort by id, which is FIFO.
func member(id uint64) string { return fmt.Sprintf("%016d", id) }

func parseMember(m string) (uint64, error) {
	id, err := strconv.ParseUint(m, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("bad member %q: %w", m, err)
	}
	return id, nil
}
