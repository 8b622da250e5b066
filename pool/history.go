package pool

import (
	"context"
	"encoding/json"
	"sort"
	"strconv"
	"time"
)

// Sample is the server's counters at one instant (Redis's clock), as the
// history keeps them: field name -> value ("pushed", "reserved", "ready"...).
type Sample struct {
	At     time.Time
	Values map[string]int64
}

// RecordHistory adds values to the history, unless a broker added a sample
// less than every ago; the history keeps the newest keep samples. Every
// broker may call it: the samples come out one an interval, whoever writes.
func (p *Pool) RecordHistory(ctx context.Context, every time.Duration, keep int, values map[string]int64) error {
	names := make([]string, 0, len(values))
	for k := range values {
		names = append(names, k)
	}
	sort.Strings(names)
	args := []string{strconv.FormatInt(every.Milliseconds(), 10), strconv.Itoa(keep)}
	for _, k := range names {
		args = append(args, k, strconv.FormatInt(values[k], 10))
	}
	return wrapRedis("record history", historyScript.Exec(ctx, p.client, []string{p.keys.history()}, args).Error())
}

// History returns the history's samples, oldest first.
func (p *Pool) History(ctx context.Context) ([]Sample, error) {
	raw, err := p.client.Do(ctx, p.client.B().Lrange().Key(p.keys.history()).Start(0).Stop(-1).Build()).AsStrSlice()
	if err != nil {
		return nil, wrapRedis("history", err)
	}
	out := make([]Sample, 0, len(raw))
	for i := len(raw) - 1; i >= 0; i-- {
		var m map[string]float64
		if json.Unmarshal([]byte(raw[i]), &m) != nil {
			continue // not a sample: skip it rather than fail the chart
		}
		s := Sample{At: time.UnixMilli(int64(m["t"])), Values: make(map[string]int64, len(m))}
		for k, v := range m {
			if k != "t" {
				s.Values[k] = int64(v)
			}
		}
		out = append(out, s)
	}
	return out, nil
}
