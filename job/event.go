package job

import (
	"strconv"
	"strings"
	"time"
)

// Event is one transition of a job of a topic with events = true, as its
// bucket's stream holds it (lua/lib_events.lua emit): the stream entry's id ("ms-seq",
// ordered within the bucket), what happened ("pushed", "reserved",
// "progress", "stalled", "completed", "failed", "dead", "cancelled",
// "expired"), the topic, the job, its attempt, and the detail (a result, an
// error, a progress; Cut when it was cut at 1 KiB).
type Event struct {
	Bucket   int
	ID       string
	Type     string
	Topic    string
	Job      uint64
	ClientID string
	Attempt  int
	Detail   string
	Cut      bool
}

// At is when the event happened, Redis's clock (its id's ms).
func (e Event) At() time.Time {
	ms, _ := strconv.ParseInt(strings.SplitN(e.ID, "-", 2)[0], 10, 64)
	return time.UnixMilli(ms)
}

// CompareEventIDs orders two stream ids ("ms-seq"): -1, 0 or 1; an id it
// cannot read is before every other.
func CompareEventIDs(a, b string) int {
	am, as, aok := splitEventID(a)
	bm, bs, bok := splitEventID(b)
	switch {
	case !aok && !bok:
		return 0
	case !aok:
		return -1
	case !bok:
		return 1
	case am != bm:
		return cmpUint(am, bm)
	}
	return cmpUint(as, bs)
}

func splitEventID(id string) (ms, seq uint64, ok bool) {
	m, s, found := strings.Cut(id, "-")
	if !found {
		return 0, 0, false
	}
	var err1, err2 error
	ms, err1 = strconv.ParseUint(m, 10, 64)
	seq, err2 = strconv.ParseUint(s, 10, 64)
	return ms, seq, err1 == nil && err2 == nil
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// ValidEventID says id is a stream id ("ms-seq").
func ValidEventID(id string) bool { _, _, ok := splitEventID(id); return ok }
