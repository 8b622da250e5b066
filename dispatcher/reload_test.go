package dispatcher_test

import (
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
	"github.com/gmq/gmq/job"
)

// A reload that loosens a group_* setting lets the groups parked under the
// old one back, as a run-time change does (an attack: a SIGHUP that set
// group_rate 0 left a group parked for its old token, ~1,000 s): through
// the topic's own section, and through a pattern section.
func TestReloadUnparksGroups(t *testing.T) {
	for _, tc := range []struct {
		name, topic, section string
	}{
		{"the topic's section", "gr", "gr"},
		{"a pattern section", "gp-1", "gp-*"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := broker(t)
			d, ctx := b.Dispatcher, t.Context()
			if err := d.ApplyTopicConfig(ctx, nil, map[string]job.TopicConfig{tc.section: {"group_rate": "0.001"}}); err != nil {
				t.Fatal(err)
			}
			for range 3 {
				push(t, b, job.Spec{Topic: tc.topic, Body: "x", Group: "a", TTR: time.Minute})
			}
			if j, err := popOne(d, ctx, []string{tc.topic}, 0); err != nil || j == nil {
				t.Fatalf("first pop: %v %v", j, err)
			}
			if j, err := popOne(d, ctx, []string{tc.topic}, 0); err != nil || j != nil {
				t.Fatalf("second pop, group_rate 0.001: %v %v, want none (parked)", j, err)
			}
			if err := d.ApplyTopicConfig(ctx, nil, map[string]job.TopicConfig{tc.section: {}}); err != nil {
				t.Fatal(err)
			}
			if j, err := popOne(d, ctx, []string{tc.topic}, 0); err != nil || j == nil {
				t.Fatalf("pop after the reload lifted group_rate: %v %v, want the job", j, err)
			}
		})
	}
}

// A start or a reload that writes the group settings as they are keeps
// every held group held (an attack: restarting a broker with the same
// conf.ini let every group of a [topic.x] with group_rate go at once).
func TestSameSettingsKeepGroupsHeld(t *testing.T) {
	topics := map[string]job.TopicConfig{"held": {"group_rate": "0.001"}}
	conf := func(c *config.Config) { c.Topics = topics }
	b := brokertest.Fresh(t, conf)
	d, ctx := b.Dispatcher, t.Context()
	for range 3 {
		push(t, b, job.Spec{Topic: "held", Body: "x", Group: "a", TTR: time.Minute})
	}
	if j, err := popOne(d, ctx, []string{"held"}, 0); err != nil || j == nil {
		t.Fatalf("first pop: %v %v", j, err)
	}
	// Another broker starts with the same conf.ini, and this one reloads it.
	brokertest.Start(t, brokertest.Redis(), conf)
	if err := d.ApplyTopicConfig(ctx, nil, topics); err != nil {
		t.Fatal(err)
	}
	if j, err := popOne(d, ctx, []string{"held"}, 0); err != nil || j != nil {
		t.Fatalf("pop after a start and a reload that changed nothing: %v %v, want none (held)", j, err)
	}
}
