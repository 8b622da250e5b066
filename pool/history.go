package pool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/gmq/gmq/job"
	"github.com/gmq/gmq/lua"
)

// AddHistory adds values to the history, unless a broker added a sample
// less than every ago, and says whether it did; the history keeps the
// newest keep samples. Every broker may call it: the samples come out one
// an interval, whoever writes.
func (p *Pool) AddHistory(ctx context.Context, every time.Duration, keep int, values map[string]int64) (bool, error) {
	args := historyArgs(every, keep, 0, []map[string]int64{values})
	n, err := historyScript.Exec(ctx, p.client, []string{p.keys.history()}, args).AsInt64()
	if err != nil {
		return false, wrapRedis("record history", err)
	}
	return n == 1, nil
}

// RecordTopicHistory adds a sample to the own history of each topic of
// samples (topic -> field -> value): each keeps its newest keep samples,
// and lives ttl after its last one, so the list of a topic no longer
// sampled (deleted, forgotten, or gone past the first page) goes by
// itself. One script call a bucket, the buckets at once.
func (p *Pool) RecordTopicHistory(ctx context.Context, keep int, ttl time.Duration, samples map[string]map[string]int64) error {
	var wg sync.WaitGroup
	byBucket := make(map[int][]string)
	for topic := range samples {
		b := p.keys.bucketOf(topic)
		byBucket[b] = append(byBucket[b], topic)
	}
	errs, i := make([]error, len(byBucket)), 0
	for _, topics := range byBucket {
		keys := make([]string, len(topics))
		values := make([]map[string]int64, len(topics))
		for k, t := range topics {
			keys[k], values[k] = p.keys.topicHistory(t), samples[t]
		}
		err := &errs[i]
		i++
		wg.Go(func() {
			*err = wrapRedis("record topic history", historyScript.Exec(ctx, p.client, keys, historyArgs(0, keep, ttl, values)).Error())
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// historyArgs is history.lua's ARGV: the interval, keep, the time to live,
// the fields (every name of values, sorted), then each sample's values
// ("" for a field it lacks).
func historyArgs(every time.Duration, keep int, ttl time.Duration, values []map[string]int64) []string {
	var names []string
	for _, v := range values {
		for k := range v {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	names = slices.Compact(names)
	args := lua.AppendArgs(make([]string, 0, 4+len(names)*(1+len(values))), "history",
		"every", strconv.FormatInt(every.Milliseconds(), 10), "n", strconv.Itoa(keep),
		"ttl", strconv.FormatInt(ttl.Milliseconds(), 10), "f", strconv.Itoa(len(names)))
	args = append(args, names...)
	for _, v := range values {
		for _, k := range names {
			if x, ok := v[k]; ok {
				args = append(args, strconv.FormatInt(x, 10))
			} else {
				args = append(args, "")
			}
		}
	}
	return args
}

// History returns the history's samples, oldest first.
func (p *Pool) History(ctx context.Context) ([]job.Sample, error) {
	raw, err := p.client.Do(ctx, p.client.B().Lrange().Key(p.keys.history()).Start(0).Stop(-1).Build()).AsStrSlice()
	if err != nil {
		return nil, wrapRedis("history", err)
	}
	return decodeSamples(raw), nil
}

// TopicHistory returns the own history of each of topics (see
// RecordTopicHistory), oldest first: none for a topic that has none.
func (p *Pool) TopicHistory(ctx context.Context, topics []string) (map[string][]job.Sample, error) {
	cmds := make(rueidis.Commands, len(topics))
	for i, t := range topics {
		cmds[i] = p.client.B().Lrange().Key(p.keys.topicHistory(t)).Start(0).Stop(-1).Build()
	}
	out := make(map[string][]job.Sample, len(topics))
	for i, res := range p.client.DoMulti(ctx, cmds...) {
		raw, err := res.AsStrSlice()
		if err != nil {
			return nil, wrapRedis(fmt.Sprintf("history of topic %q", topics[i]), err)
		}
		out[topics[i]] = decodeSamples(raw)
	}
	return out, nil
}

// decodeSamples decodes a history list (newest first) into samples, oldest first.
func decodeSamples(raw []string) []job.Sample {
	out := make([]job.Sample, 0, len(raw))
	for i := len(raw) - 1; i >= 0; i-- {
		var m map[string]float64
		if json.Unmarshal([]byte(raw[i]), &m) != nil {
			continue // not a sample: skip it rather than fail the chart
		}
		s := job.Sample{At: time.UnixMilli(int64(m["t"])), Values: make(map[string]int64, len(m))}
		for k, v := range m {
			if k != "t" {
				s.Values[k] = int64(v)
			}
		}
		out = append(out, s)
	}
	return out
}
