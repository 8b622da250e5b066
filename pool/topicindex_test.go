package pool

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/gmq/gmq/job"
)

// TopicPage cuts the same pages as sorting every name would, whatever the
// buckets the names fall in, the offset and the limit.
func TestTopicPage(t *testing.T) {
	p, ctx := newPool(t)
	var want []string
	var specs []job.Spec
	for _, stem := range []string{"a", "A", "b", "Z", "0", "9", "_", "a.b", "a(1)", "x$", "a/b", "a;b", "a-b"} {
		for i := range 5 {
			name := stem + strconv.Itoa(i*7)
			want = append(want, name)
			specs = append(specs, job.Spec{Topic: name, Body: "x", Priority: job.DefaultPriority})
		}
	}
	if _, errs := p.PushBatch(ctx, specs); slices.ContainsFunc(errs, func(err error) bool { return err != nil }) {
		t.Fatalf("push: %v", errs)
	}
	slices.Sort(want)
	n := len(want)
	for _, tc := range []struct {
		offset, limit int
		first, last   int // want[first:last]
	}{
		{0, 10, 0, 10},
		{0, 1, 0, 1},
		{0, 0, 0, 0},
		{0, -1, 0, 0},
		{-5, 3, 0, 3},
		{17, 9, 17, 26},
		{n - 4, 10, n - 4, n},
		{n - 1, 1, n - 1, n},
		{n, 10, n, n},
		{n + 100, 10, n, n},
		{0, n, 0, n},
		{0, math.MaxInt, 0, n},
		{3, math.MaxInt, 3, n},
		{math.MaxInt, 10, n, n},
		{math.MaxInt, math.MaxInt, n, n},
		{math.MaxInt - 1, 2, n, n},
	} {
		t.Run(fmt.Sprintf("offset %d limit %d", tc.offset, tc.limit), func(t *testing.T) {
			names, total, err := p.TopicPage(ctx, tc.offset, tc.limit)
			if err != nil || total != n || !slices.Equal(names, want[tc.first:tc.last]) {
				t.Fatalf("got %q of %d (%v), want %q of %d", names, total, err, want[tc.first:tc.last], n)
			}
		})
	}
	if all, err := p.Topics(ctx); err != nil || !slices.Equal(all, want) {
		t.Fatalf("topics: %q %v", all, err)
	}
	var buckets []int
	for _, name := range want {
		buckets = append(buckets, p.BucketOf(name))
	}
	if slices.Sort(buckets); buckets[0] == buckets[len(buckets)-1] {
		t.Fatal("every name fell in one bucket: the merge was not exercised")
	}
}

// A page whose names mostly sit in one bucket (names need not hash evenly:
// a parent's fanout children share its bucket) takes more than one read of
// that bucket's index.
func TestTopicPageFromOneBucket(t *testing.T) {
	p, ctx := newPool(t)
	var want []string
	var specs []job.Spec
	for i := 0; len(want) < 300; i++ {
		name := fmt.Sprintf("m%05d", i)
		if p.BucketOf(name) == 0 || name < "m00030" { // a few in the other buckets
			want = append(want, name)
			specs = append(specs, job.Spec{Topic: name, Body: "x", Priority: job.DefaultPriority})
		}
	}
	for _, name := range []string{"a1", "a2", "a3", "z1", "z2", "z3"} {
		want = append(want, name)
		specs = append(specs, job.Spec{Topic: name, Body: "x", Priority: job.DefaultPriority})
	}
	if _, errs := p.PushBatch(ctx, specs); slices.ContainsFunc(errs, func(err error) bool { return err != nil }) {
		t.Fatalf("push: %v", errs)
	}
	slices.Sort(want)
	for _, tc := range []struct{ offset, limit int }{{0, 250}, {0, 306}, {100, 150}, {290, 100}, {0, math.MaxInt}} {
		names, total, err := p.TopicPage(ctx, tc.offset, tc.limit)
		last := tc.offset + min(tc.limit, len(want)-tc.offset)
		if err != nil || total != len(want) || !slices.Equal(names, want[tc.offset:last]) {
			t.Fatalf("offset %d limit %d: %d names of %d (%v), want %d", tc.offset, tc.limit, len(names), total, err, last-tc.offset)
		}
	}
}

// The index lists a topic exactly while its bucket's set does: after a
// push, a pause that makes a topic, a purge (the topic stays), a forget, a
// delete and max_queue_age's forgetting.
func TestTopicIndexFollowsTheSet(t *testing.T) {
	p, ctx := newPool(t)
	if err := p.SetTopicConfig(ctx, "aging", job.TopicConfig{"max_queue_age": "1"}); err != nil {
		t.Fatal(err)
	}
	var emptied uint64
	for _, step := range []struct {
		name string
		do   func() error
		want string
	}{
		{"pushes", func() error {
			for _, topic := range []string{"kept", "emptied", "deleted", "aging", "kept"} {
				id := mustPush(t, p, ctx, job.Spec{Topic: topic, Body: "x", TTR: time.Minute})
				if topic == "emptied" {
					emptied = id
				}
			}
			return nil
		}, "[aging deleted emptied kept]"},
		{"a pause that makes a topic", func() error {
			_, err := p.Pause(ctx, "paused", PauseParams{For: time.Minute, EvenIfUnknown: true})
			return err
		}, "[aging deleted emptied kept paused]"},
		{"a pause of an unknown topic, refused", func() error {
			if _, err := p.Pause(ctx, "nope", PauseParams{For: time.Minute}); err == nil {
				return fmt.Errorf("paused an unknown topic")
			}
			return nil
		}, "[aging deleted emptied kept paused]"},
		{"a purge: the topic stays", func() error {
			_, err := p.Purge(ctx, "kept", job.Stored...)
			return err
		}, "[aging deleted emptied kept paused]"},
		{"forget, of an empty topic", func() error {
			if err := p.Delete(ctx, num(emptied), 0); err != nil {
				return err
			}
			_, err := p.ForgetTopic(ctx, "emptied")
			return err
		}, "[aging deleted kept paused]"},
		{"delete", func() error {
			_, err := p.DeleteTopic(ctx, "deleted")
			return err
		}, "[aging kept paused]"},
		{"max_queue_age", func() error {
			if _, err := p.Purge(ctx, "aging", job.Stored...); err != nil {
				return err
			}
			time.Sleep(1100 * time.Millisecond)
			_, _, err := p.Tick(ctx, p.BucketOf("aging"), "aging")
			return err
		}, "[kept paused]"},
	} {
		if err := step.do(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if names, err := p.Topics(ctx); err != nil || fmt.Sprint(names) != step.want {
			t.Fatalf("after %s: topics %v (%v), want %s", step.name, names, err, step.want)
		}
		checkClean(t, p, ctx) // the index holds its set's names
	}
}

// Data written by a gmq that kept no index (a topics set alone), or an index
// that disagrees with its set, is indexed anew at start, in steps.
func TestTopicIndexRebuiltAtStart(t *testing.T) {
	p, ctx := newPool(t)
	c := p.client
	mustPush(t, p, ctx, job.Spec{Topic: "new", Body: "x"}) // indexed as it is made
	want := []string{"new"}
	perBucket := make([][]string, p.opts.Buckets)
	for i := range 5000 {
		name := fmt.Sprintf("old%05d", i)
		b := p.keys.bucketOf(name)
		perBucket[b] = append(perBucket[b], name)
		want = append(want, name)
	}
	for b, names := range perBucket {
		if err := c.Do(ctx, c.B().Sadd().Key(p.keys.topics(b)).Member(names...).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	// Names the index lists that its set does not hold: more than a step's.
	ghosts := c.B().Zadd().Key(p.keys.topicIndex(0)).ScoreMember()
	for i := range topicIndexStep + 200 {
		ghosts = ghosts.ScoreMember(0, fmt.Sprintf("ghost%05d", i))
	}
	if err := c.Do(ctx, ghosts.Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if problems, err := p.Check(ctx); err != nil || len(problems) != p.opts.Buckets {
		t.Fatalf("check before the start: %q %v, want every bucket's index found wrong", problems, err)
	}
	if err := p.Init(ctx); err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	if names, err := p.Topics(ctx); err != nil || !slices.Equal(names, want) {
		t.Fatalf("after the start: %d topics (%v), want %d", len(names), err, len(want))
	}
	if page, total, err := p.TopicPage(ctx, 4990, 100); err != nil || total != len(want) || !slices.Equal(page, want[4990:]) {
		t.Fatalf("last page: %q of %d (%v)", page, total, err)
	}
	checkClean(t, p, ctx)
}

// A push lists its topic (and counts its birth) only when the topic's count
// of pushes starts with it: once for many pushes, again after the topic is
// forgotten, and not again for a topic a pause listed (batch.lua).
func TestPushListsItsTopicOnce(t *testing.T) {
	for _, tc := range []struct {
		name    string
		steps   func(t *testing.T, p *Pool, ctx context.Context)
		creates int64
	}{
		{"many pushes", func(t *testing.T, p *Pool, ctx context.Context) {
			for range 3 {
				mustPush(t, p, ctx, job.Spec{Topic: "t", Body: "x"})
			}
		}, 1},
		{"pushed after it was forgotten", func(t *testing.T, p *Pool, ctx context.Context) {
			id := mustPush(t, p, ctx, job.Spec{Topic: "t", Body: "x"})
			if err := p.Delete(ctx, num(id), 0); err != nil {
				t.Fatal(err)
			}
			if forgot, err := p.ForgetTopic(ctx, "t"); err != nil || !forgot {
				t.Fatalf("forget: %v %v", forgot, err)
			}
			if names, err := p.Topics(ctx); err != nil || len(names) != 0 {
				t.Fatalf("topics after forget: %v %v", names, err)
			}
			mustPush(t, p, ctx, job.Spec{Topic: "t", Body: "x"})
		}, 2},
		{"listed by a pause first", func(t *testing.T, p *Pool, ctx context.Context) {
			if _, err := p.Pause(ctx, "t", PauseParams{For: time.Millisecond, EvenIfUnknown: true}); err != nil {
				t.Fatal(err)
			}
			mustPush(t, p, ctx, job.Spec{Topic: "t", Body: "x"})
		}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, ctx := newPool(t)
			tc.steps(t, p, ctx)
			if names, err := p.Topics(ctx); err != nil || !slices.Equal(names, []string{"t"}) {
				t.Fatalf("topics %v %v, want [t]", names, err)
			}
			if c, err := p.Stats(ctx); err != nil || c.QueueCreates != tc.creates {
				t.Fatalf("queue_creates %d %v, want %d", c.QueueCreates, err, tc.creates)
			}
			if problems, err := p.Check(ctx); err != nil || len(problems) > 0 {
				t.Fatalf("check: %v %v", problems, err)
			}
		})
	}
}
