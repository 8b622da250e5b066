package pool

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/gmq/gmq/job"
)

// ReadEvents reads up to count of bucket b's events after id after
// (exclusive), waiting up to block for the first when there is none yet
// (0: not at all). A wait holds a connection of its own.
func (p *Pool) ReadEvents(ctx context.Context, b int, after string, count int, block time.Duration) ([]job.Event, error) {
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
func (p *Pool) events(b int, entries []rueidis.XRangeEntry) []job.Event {
	out := make([]job.Event, 0, len(entries))
	for _, e := range entries {
		n, err := parseMember(e.FieldValues["job"])
		if err != nil {
			continue
		}
		attempt, _ := strconv.Atoi(e.FieldValues["attempt"])
		out = append(out, job.Event{Bucket: b, ID: e.ID, Type: e.FieldValues["type"], Topic: e.FieldValues["topic"], Job: n,
			ClientID: e.FieldValues["cid"], Attempt: attempt, Detail: e.FieldValues["detail"], Cut: e.FieldValues["cut"] == "1"})
	}
	return out
}

// EventsBucket is the bucket whose stream holds topic's events.
func (p *Pool) EventsBucket(topic string) int { return p.keys.bucketOf(topic) }
