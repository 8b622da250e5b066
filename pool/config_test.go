package pool

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gmq/gmq/job"
)

func TestTopicSettingsLayers(t *testing.T) {
	p, ctx := newPool(t)
	if err := p.ApplyTopicConfig(ctx, job.TopicConfig{"max_items": "10"},
		map[string]job.TopicConfig{"orders": {"max_items": "3"}, "old": {"max_item_size": "9"}}); err != nil {
		t.Fatal(err)
	}
	if err := p.SetTopicConfig(ctx, "orders", job.TopicConfig{"discard_old_when_full": "true"}); err != nil {
		t.Fatal(err)
	}
	l, err := p.TopicConfig(ctx, "orders")
	if err != nil || l.Effective["max_items"] != "3" || l.Effective["discard_old_when_full"] != "true" || l.Defaults["max_items"] != "10" {
		t.Fatalf("orders: %+v %v", l, err)
	}
	// A reload without [topic.old] drops its file layer; run-time changes stay.
	if err := p.ApplyTopicConfig(ctx, nil, map[string]job.TopicConfig{"orders": {"max_items": "4"}}); err != nil {
		t.Fatal(err)
	}
	if l, _ := p.TopicConfig(ctx, "old"); len(l.Effective) != 0 {
		t.Fatalf("old after the reload: %+v", l)
	}
	if l, _ := p.TopicConfig(ctx, "orders"); l.Effective["max_items"] != "4" || l.Run["discard_old_when_full"] != "true" {
		t.Fatalf("orders after the reload: %+v", l)
	}
	if err := p.SetTopicConfig(ctx, "orders", job.TopicConfig{"discard_old_when_full": ""}); err != nil {
		t.Fatal(err)
	}
	if l, _ := p.TopicConfig(ctx, "orders"); len(l.Run) != 0 {
		t.Fatalf("a removed run-time change stays: %+v", l)
	}
}

func TestFullTopic(t *testing.T) {
	p, ctx := newPool(t)
	if err := p.ApplyTopicConfig(ctx, nil, map[string]job.TopicConfig{
		"full": {"max_items": "2", "max_item_size": "5"}, "ring": {"max_items": "2", "discard_old_when_full": "true"}}); err != nil {
		t.Fatal(err)
	}
	mustPush(t, p, ctx, job.Spec{Topic: "full", Body: "1"})
	mustPush(t, p, ctx, job.Spec{Topic: "full", Body: "2", Delay: time.Hour}) // every state counts
	if _, err := p.Push(ctx, job.Spec{Topic: "full", Body: "3", ClientID: "third"}); !errors.Is(err, job.ErrFull) {
		t.Fatalf("push to a full topic: %v", err)
	}
	if _, err := p.Resolve(ctx, "third"); !errors.Is(err, job.ErrNotFound) {
		t.Fatalf("a refused push's client id stays claimed: %v", err)
	}
	if _, err := p.Push(ctx, job.Spec{Topic: "full", Body: "toolong"}); !errors.Is(err, job.ErrTooBig) {
		t.Fatalf("push over max_item_size: %v", err)
	}
	mustPop(t, p, ctx, "full") // TTR 0: gone, so there is room again
	mustPush(t, p, ctx, job.Spec{Topic: "full", Body: "4"})

	// A batch into a ring buffer: each push over the limit drops the head.
	specs := make([]job.Spec, 5)
	for i := range specs {
		specs[i] = job.Spec{Topic: "ring", Body: fmt.Sprint(i), ClientID: fmt.Sprintf("r-%d", i)}
	}
	for _, s := range specs[:2] {
		mustPush(t, p, ctx, s)
	}
	_, errs := p.PushBatch(ctx, specs[2:])
	for _, err := range errs {
		if err != nil {
			t.Fatalf("push to a ring: %v", err)
		}
	}
	st, err := p.TopicStats(ctx, "ring")
	if err != nil || st.Ready != 2 {
		t.Fatalf("ring holds %+v %v, want 2", st, err)
	}
	if _, err := p.Resolve(ctx, "r-0"); !errors.Is(err, job.ErrNotFound) {
		t.Fatalf("a discarded job's client id stays: %v", err)
	}
	if c, err := p.Stats(ctx); err != nil || c.Discarded != 3 {
		t.Fatalf("total_discarded: %+v %v, want 3", c, err)
	}
	if problems, err := p.Check(ctx); err != nil || len(problems) > 0 {
		t.Fatalf("check: %v %v", problems, err)
	}
}

// Pushes to a ring buffer that share one script call drop each other as
// the head: the call's earlier pushes are written before it looks.
func TestRingInOneCall(t *testing.T) {
	p, ctx := newPoolWith(t, Options{BatchSlots: 1, MaxOpsPerCall: 64})
	if err := p.ApplyTopicConfig(ctx, nil, map[string]job.TopicConfig{"ring": {"max_items": "2", "discard_old_when_full": "true"}}); err != nil {
		t.Fatal(err)
	}
	specs := make([]job.Spec, 40)
	for i := range specs {
		specs[i] = job.Spec{Topic: "ring", Body: fmt.Sprint(i)}
	}
	_, errs := p.PushBatch(ctx, specs)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("push %d: %v", i, err)
		}
	}
	if st, err := p.TopicStats(ctx, "ring"); err != nil || st.Ready != 2 {
		t.Fatalf("ring holds %+v %v, want 2", st, err)
	}
	if st := p.BatchStats(); st.Calls >= st.Ops {
		t.Logf("no two pushes shared a call (%+v): the case was not exercised", st)
	}
	if problems, err := p.Check(ctx); err != nil || len(problems) > 0 {
		t.Fatalf("check: %v %v", problems, err)
	}
}

// max_size bounds the bytes of bodies a topic holds; every way a job leaves
// (a TTR-0 pop, an ack, a flush, a discard) gives its bytes back.
func TestMaxSize(t *testing.T) {
	p, ctx := newPool(t)
	if err := p.ApplyTopicConfig(ctx, nil, map[string]job.TopicConfig{
		"b": {"max_size": "10"}, "ring": {"max_size": "10", "discard_old_when_full": "true"}}); err != nil {
		t.Fatal(err)
	}
	mustPush(t, p, ctx, job.Spec{Topic: "b", Body: "12345"})
	mustPush(t, p, ctx, job.Spec{Topic: "b", Body: "abcd", TTR: time.Minute})
	if _, err := p.Push(ctx, job.Spec{Topic: "b", Body: "xy"}); !errors.Is(err, job.ErrFull) {
		t.Fatalf("push past max_size: %v", err)
	}
	if _, err := p.Push(ctx, job.Spec{Topic: "b", Body: "01234567890"}); !errors.Is(err, job.ErrFull) {
		t.Fatalf("a body larger than max_size: %v", err)
	}
	mustPop(t, p, ctx, "b") // TTR 0: its 5 bytes go
	held := mustPop(t, p, ctx, "b")
	mustPush(t, p, ctx, job.Spec{Topic: "b", Body: "12345"})
	if err := p.Delete(ctx, held.PublicID(), held.Attempt()); err != nil {
		t.Fatal(err)
	}
	if st, err := p.TopicStats(ctx, "b"); err != nil || st.Bytes != 5 {
		t.Fatalf("bytes after pops and an ack: %+v %v, want 5", st, err)
	}
	for _, body := range []string{"aaaa", "bbbb", "cccc"} { // the third drops the first
		mustPush(t, p, ctx, job.Spec{Topic: "ring", Body: body})
	}
	if st, _ := p.TopicStats(ctx, "ring"); st.Bytes != 8 || st.Ready != 2 {
		t.Fatalf("ring: %+v", st)
	}
	if _, err := p.Purge(ctx, "b", job.Ready, job.Delayed, job.Reserved, job.Buried); err != nil {
		t.Fatal(err)
	}
	if st, _ := p.TopicStats(ctx, "b"); st.Bytes != 0 {
		t.Fatalf("bytes after a flush: %+v", st)
	}
	if problems, err := p.Check(ctx); err != nil || len(problems) > 0 {
		t.Fatalf("check: %v %v", problems, err)
	}
}
