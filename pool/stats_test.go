package pool

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/gmq/gmq/job"
)

// TopicStatsOf reads, in the order given, what TopicStats reads one topic at
// a time: topics of several buckets, more of one bucket than one script call
// takes, settings of their own, and topics no job named.
func TestTopicStatsOf(t *testing.T) {
	p, ctx := newPool(t)
	if err := p.SetTopicConfig(ctx, "t007", job.TopicConfig{"max_items": "9"}); err != nil {
		t.Fatal(err)
	}
	var topics []string
	for i := range 3 * topicStatsStep * p.opts.Buckets / 2 {
		name := fmt.Sprintf("t%03d", i)
		topics = append(topics, name)
		for range i % 3 {
			mustPush(t, p, ctx, job.Spec{Topic: name, Body: "x", TTR: time.Minute, Priority: uint32(i)})
		}
		if i%5 == 0 {
			if _, err := p.Pause(ctx, name, PauseParams{For: time.Minute, EvenIfUnknown: true}); err != nil {
				t.Fatal(err)
			}
		}
	}
	topics = append([]string{"unknown"}, topics...)
	stats, errs := p.TopicStatsOf(ctx, topics)
	for i, topic := range topics {
		want, wantErr := p.TopicStats(ctx, topic)
		if (wantErr == nil) != (errs[i] == nil) || errs[i] != nil && !errors.Is(errs[i], job.ErrNotFound) {
			t.Fatalf("%s: error %v, one at a time %v", topic, errs[i], wantErr)
		}
		stats[i].Now, want.Now = time.Time{}, time.Time{}
		if !reflect.DeepEqual(stats[i], want) {
			t.Fatalf("%s: %+v, one at a time %+v", topic, stats[i], want)
		}
	}
	if !errors.Is(errs[0], job.ErrNotFound) {
		t.Fatalf("an unknown topic: %v", errs[0])
	}
	if stats[8].Settings["max_items"] != "9" || stats[8].Jobs != 1 || stats[3].Jobs != 2 || stats[1].PausedUntil.IsZero() {
		t.Fatalf("t007 %+v, t002 %+v, t000 %+v", stats[8], stats[3], stats[1])
	}
}
