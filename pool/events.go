package pool

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"
)

// Event is one transition of a job of a topic with events = true, as its
// bucket's stream holds it (lib.lua emit): the stream entry's id ("ms-seq",
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

// ReadEvents reads up to count of bucket b's events after id after
// (exclusive), waiting up to block for the first when there is none yet
// (0: not at all). A wait holds a connection of its own.
func (p *Pool) ReadEvents(ctx context.Context, b int, after string, count int, block time.Duration) ([]Event, error) {
	if block <= 0 {
		cmd := p.client.B().Xrange().Key(p.keys.events(b)).Start("(" + after).End("+").Count(int64(count)).Build()
		entries, err := p.client.Do(ctx, cmd).AsXRange()
		if err != nil {
			return nil, wrapRedis("read events", err)
		}
		return p.events(b, entries), nil
	}
	cmd := p.client.B().Xread().Count(int64(count)).Block(block.Milliseconds()).Streams().Key(p.keys.events(b)).Id(after).Build()
	streams, err := p.client.Do(ctx, cmd).AsXRead()
	if rueidis.IsRedisNil(err) {
		return nil, nil // none within block
	}
	if err != nil {
		return nil, wrapRedis("read events", err)
	}
	return p.events(b, streams[p.keys.events(b)]), nil
}

// EventBounds are the ids of bucket b's first and last events ("" when the
// stream holds none): a position before first was trimmed away.
func (p *Pool) EventBounds(ctx context.Context, b int) (first, last string, err error) {
	key := p.keys.events(b)
	res := p.client.DoMulti(ctx,
		p.client.B().Xrange().Key(key).Start("-").End("+").Count(1).Build(),
		p.client.B().Xrevrange().Key(key).End("+").Start("-").Count(1).Build())
	for i, r := range res {
		entries, err := r.AsXRange()
		if err != nil {
			return "", "", wrapRedis("read event bounds", err)
		}
		if len(entries) > 0 {
			if i == 0 {
				first = entries[0].ID
			} else {
				last = entries[0].ID
			}
		}
	}
	return first, last, nil
}

// events turns stream entries into events; one it cannot read is skipped.
func (p *Pool) events(b int, entries []rueidis.XRangeEntry) []Event {
	out := make([]Event, 0, len(entries))
	for _, e := range entries {
		n, err := parseMember(e.FieldValues["job"])
		if err != nil {
			continue
		}
		attempt, _ := strconv.Atoi(e.FieldValues["attempt"])
		out = append(out, Event{Bucket: b, ID: e.ID, Type: e.FieldValues["type"], Topic: e.FieldValues["topic"], Job: n,
			ClientID: e.FieldValues["cid"], Attempt: attempt, Detail: e.FieldValues["detail"], Cut: e.FieldValues["cut"] == "1"})
	}
	return out
}

// EventsBucket is the bucket whose stream holds topic's events.
func (p *Pool) EventsBucket(topic string) int { return p.keys.bucketOf(topic) }

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
