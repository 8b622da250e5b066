package pool

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/gmq/gmq/job"
)

func TestFanout(t *testing.T) {
	p, ctx := newPool(t)
	other := New(p.client, p.opts) // a second broker on the same Redis, its fanout cache its own
	mustPush(t, p, ctx, job.Spec{Topic: "orders", Body: "before"})
	if j := mustPop(t, p, ctx, "orders+audit"); j != nil { // a pop references the child
		t.Fatalf("a new child has a job: %+v", j)
	}
	mustPush(t, other, ctx, job.Spec{Topic: "orders", Body: "after"}) // other's cache knows no child yet
	if _, err := p.TopicConfig(ctx, "orders+mail"); err != nil {      // so does reading its settings
		t.Fatal(err)
	}
	mustPush(t, p, ctx, job.Spec{Topic: "orders", Body: "third"})
	for topic, want := range map[string][]string{
		"orders": {"before", "after", "third"}, "orders+audit": {"after", "third"}, "orders+mail": {"third"},
	} {
		var got []string // in id order, which is push order only within one broker
		for range want {
			if j := mustPop(t, p, ctx, topic); j != nil && j.Topic == topic {
				got = append(got, j.Body)
			}
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("pop %s: %q, want %q", topic, got, want)
		}
		if j := mustPop(t, p, ctx, topic); j != nil {
			t.Fatalf("pop %s: an extra job %+v", topic, j)
		}
	}
	if st, err := p.TopicStats(ctx, "orders"); err != nil || len(st.Children) != 2 {
		t.Fatalf("children: %v %v", st.Children, err)
	}

	// A child inherits its parent's settings, under its own.
	if err := p.SetTopicConfig(ctx, "orders", job.TopicConfig{"max_items": "5", "max_age": "60"}); err != nil {
		t.Fatal(err)
	}
	if err := p.SetTopicConfig(ctx, "orders+mail", job.TopicConfig{"max_items": "1"}); err != nil {
		t.Fatal(err)
	}
	l, err := p.TopicConfig(ctx, "orders+mail")
	if err != nil || l.Effective["max_items"] != "1" || l.Effective["max_age"] != "60" || l.Parent["max_items"] != "5" {
		t.Fatalf("child settings: %+v %v", l, err)
	}
	mustPush(t, p, ctx, job.Spec{Topic: "orders", Body: "1"})
	mustPush(t, p, ctx, job.Spec{Topic: "orders", Body: "2"}) // mail is full: it misses this one, the others do not
	if st, _ := p.TopicStats(ctx, "orders+mail"); st.Ready != 1 {
		t.Fatalf("a full child: %+v", st)
	}
	if st, _ := p.TopicStats(ctx, "orders+audit"); st.Ready != 2 {
		t.Fatalf("audit: %+v", st)
	}
	if j := mustPop(t, p, ctx, "orders+audit"); j.Expires.IsZero() {
		t.Fatalf("the parent's max_age did not reach its child's copy: %+v", j)
	}

	// A deleted child gets no more copies.
	if _, err := p.DeleteTopic(ctx, "orders+audit"); err != nil {
		t.Fatal(err)
	}
	mustPush(t, other, ctx, job.Spec{Topic: "orders", Body: "after the delete"})
	if _, err := p.TopicStats(ctx, "orders+audit"); !errors.Is(err, job.ErrNotFound) {
		t.Fatalf("a deleted child got a copy: %v", err)
	}
	checkClean(t, p, ctx)
}

func TestFanoutOnly(t *testing.T) {
	p, ctx := newPool(t)
	if err := p.SetTopicConfig(ctx, "fo", job.TopicConfig{"fanout_only": "true"}); err != nil {
		t.Fatal(err)
	}
	got, err := p.Push(ctx, job.Spec{Topic: "fo", Body: "nowhere", ClientID: "hole"})
	if err != nil || got.Kept {
		t.Fatalf("push to a fanout_only topic without children: %+v %v", got, err)
	}
	mustPop(t, p, ctx, "fo+a")
	mustPop(t, p, ctx, "fo+b")
	got, err = p.Push(ctx, job.Spec{Topic: "fo", Body: "copied", ClientID: "copied"})
	if err != nil || got.Kept || len(got.Children) != 2 {
		t.Fatalf("push: %+v %v", got, err)
	}
	if j := mustPop(t, p, ctx, "fo"); j != nil {
		t.Fatalf("a fanout_only topic kept a copy: %+v", j)
	}
	for _, c := range []string{"fo+a", "fo+b"} {
		if j := mustPop(t, p, ctx, c); j == nil || j.Body != "copied" || j.ClientID != "" {
			t.Fatalf("pop %s: %+v", c, j)
		}
	}
	if _, err := p.Resolve(ctx, "copied"); !errors.Is(err, job.ErrNotFound) {
		t.Fatalf("a fanout_only push's client id resolves: %v", err)
	}
	checkClean(t, p, ctx)
}

// max_queue_age: a topic older than it is forgotten once empty; a fanout
// child so forgotten stops getting copies.
func TestMaxQueueAge(t *testing.T) {
	p, ctx := newPool(t)
	if err := p.SetTopicConfig(ctx, "short", job.TopicConfig{"max_queue_age": "1"}); err != nil {
		t.Fatal(err)
	}
	mustPop(t, p, ctx, "short+kid") // referenced: made, and inherits the parent's max_queue_age
	mustPush(t, p, ctx, job.Spec{Topic: "short", Body: "x"})
	if j := mustPop(t, p, ctx, "short+kid"); j == nil {
		t.Fatal("the child got no copy")
	}
	time.Sleep(1100 * time.Millisecond)
	b := p.BucketOf("short")
	topics, _, err := p.DueTopics(ctx, b, 10)
	if err != nil || !slices.Contains(topics, "short") || !slices.Contains(topics, "short+kid") {
		t.Fatalf("due topics: %v %v", topics, err)
	}
	for _, topic := range topics {
		if _, _, err := p.Tick(ctx, b, topic); err != nil {
			t.Fatal(err)
		}
	}
	// short holds a job: it stays, and is looked at again; its empty child goes.
	if _, err := p.TopicStats(ctx, "short"); err != nil {
		t.Fatalf("a topic with a job was forgotten: %v", err)
	}
	if st, _ := p.TopicStats(ctx, "short"); len(st.Children) != 0 {
		t.Fatalf("an aged empty child is still a child: %v", st.Children)
	}
	mustPop(t, p, ctx, "short")
	time.Sleep(1100 * time.Millisecond)
	if _, _, err := p.Tick(ctx, b, "short"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.TopicStats(ctx, "short"); !errors.Is(err, job.ErrNotFound) {
		t.Fatalf("an aged empty topic is still known: %v", err)
	}
	c, err := p.Stats(ctx)
	if err != nil || c.QueueExpires != 2 || c.QueueCreates != 2 {
		t.Fatalf("counters: %+v %v", c, err)
	}
	checkClean(t, p, ctx)
}
