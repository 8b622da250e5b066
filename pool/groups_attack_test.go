package pool

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/gmq/gmq/job"
)

// From an attack on groups: each of these once left jobs that no pop could
// take, or broke group_max_reserved.
func TestGroupsAttacked(t *testing.T) {
	t.Run("ungrouped jobs pushed in the call that makes the topic grouped", func(t *testing.T) {
		p, ctx := newPool(t)
		specs := make([]job.Spec, 41)
		for i := range specs {
			specs[i] = job.Spec{Topic: "fresh", Body: "x", TTR: time.Minute}
		}
		specs[40].Group = "a"
		if _, errs := p.PushBatch(ctx, specs); errs[0] != nil {
			t.Fatal(errs[0])
		}
		checkStore(t, p, ctx)
		if got := popBodies(t, p, ctx, "fresh", 50); len(got) != 41 {
			t.Fatalf("popped %d of 41", len(got))
		}
	})
	t.Run("a TTR of 0 under group_max_reserved", func(t *testing.T) {
		p, ctx := newPool(t)
		if err := p.SetTopicConfig(ctx, "cap0", job.TopicConfig{"group_max_reserved": "1"}); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			mustPush(t, p, ctx, job.Spec{Topic: "cap0", Body: "a", Group: "a"})
		}
		if got := popBodies(t, p, ctx, "cap0", 4); len(got) != 3 {
			t.Fatalf("popped %d of 3 jobs that are never reserved", len(got))
		}
		checkStore(t, p, ctx)
	})
	t.Run("jobs reserved before the topic became grouped", func(t *testing.T) {
		p, ctx := newPool(t)
		if err := p.SetTopicConfig(ctx, "pre", job.TopicConfig{"group_max_reserved": "1"}); err != nil {
			t.Fatal(err)
		}
		pushGroup(t, p, ctx, "pre", "", 2)
		mustPop(t, p, ctx, "pre")
		pushGroup(t, p, ctx, "pre", "g", 1)
		checkStore(t, p, ctx)
		if got := popBodies(t, p, ctx, "pre", 3); len(got) != 1 || got[0] != "g" {
			t.Fatalf("popped %q: the group '' has one reserved already", got)
		}
	})
	t.Run("group settings changed while groups are parked", func(t *testing.T) {
		p, ctx := newPool(t)
		if err := p.SetTopicConfig(ctx, "ch", job.TopicConfig{"group_max_reserved": "1", "group_rate": "0.001"}); err != nil {
			t.Fatal(err)
		}
		pushGroup(t, p, ctx, "ch", "a", 2)
		mustPop(t, p, ctx, "ch")
		if j := mustPop(t, p, ctx, "ch"); j != nil {
			t.Fatalf("held back: %+v", j)
		}
		// The change lets the parked group back (SetTopicConfig unparks).
		if err := p.SetTopicConfig(ctx, "ch", job.TopicConfig{"group_max_reserved": "", "group_rate": ""}); err != nil {
			t.Fatal(err)
		}
		if j := mustPop(t, p, ctx, "ch"); j == nil {
			t.Fatal("still held back after the limits were lifted")
		}
	})
	t.Run("many parked groups unpark in bounded steps", func(t *testing.T) {
		// Issue 31: one call unparked every group, holding Redis 857 ms at
		// 500,000; now each call looks at unparkStep, and the pool calls
		// again while a step is full.
		p, ctx := newPool(t)
		if err := p.SetTopicConfig(ctx, "many", job.TopicConfig{"group_rate": "0.001"}); err != nil {
			t.Fatal(err)
		}
		groups := 2*unparkStep + 500
		specs := make([]job.Spec, 0, 2*groups)
		for g := range groups {
			for range 2 {
				specs = append(specs, job.Spec{Topic: "many", Body: "x", Group: "g" + strconv.Itoa(g), TTR: time.Minute})
			}
		}
		for i := 0; i < len(specs); i += 1000 {
			if _, errs := p.PushBatch(ctx, specs[i:min(i+1000, len(specs))]); errs[0] != nil {
				t.Fatal(errs[0])
			}
		}
		for range groups { // each group's first job: its token taken, the group parked
			if mustPop(t, p, ctx, "many") == nil {
				t.Fatal("a group's first job held back")
			}
		}
		if j := mustPop(t, p, ctx, "many"); j != nil {
			t.Fatalf("a second job of a parked group: %+v", j)
		}
		// One call is one step: it looks at unparkStep groups, no more.
		step, err := unparkGroupsScript.Exec(ctx, p.client, p.keys.withTopics(p.keys.bucketOf("many"), "many"),
			unparkGroupsScript.args(p.opts.Origin, "", "topic", "many", "n", strconv.Itoa(unparkStep))).AsIntSlice()
		if err != nil || len(step) != 2 || step[0] != unparkStep || step[1] != unparkStep {
			t.Fatalf("one step: %v %v, want %d back of %d looked at", step, err, unparkStep, unparkStep)
		}
		if n, err := p.UnparkGroups(ctx, "many"); err != nil || n != int64(groups-unparkStep) {
			t.Fatalf("unparked %d of the %d left (%v)", n, groups-unparkStep, err)
		}
		if got := popBodies(t, p, ctx, "many", groups+1); len(got) != groups {
			t.Fatalf("popped %d after the unpark, want every group's second job (%d)", len(got), groups)
		}
		checkStore(t, p, ctx)
	})
	t.Run("idle groups held by group_rate are bounded", func(t *testing.T) {
		// Issue 31: every group served under group_rate stayed in the ring
		// until its token (11.6 days at 1e-6), however many a producer made.
		p, ctx := newPool(t)
		if err := p.SetTopicConfig(ctx, "idle", job.TopicConfig{"group_rate": "0.000001", "group_max_parked": "10"}); err != nil {
			t.Fatal(err)
		}
		ring := p.keys.tag(p.keys.bucketOf("idle")) + ":group_ring:idle"
		for g := range 25 { // served one at a time: g0's token comes first
			pushGroup(t, p, ctx, "idle", "g"+strconv.Itoa(g), 1)
			if j := mustPop(t, p, ctx, "idle"); j == nil {
				t.Fatalf("group g%d's first job held back", g)
			}
		}
		n, err := p.client.Do(ctx, p.client.B().Zcard().Key(ring).Build()).AsInt64()
		if err != nil || n != 10 {
			t.Fatalf("the ring holds %d idle groups (%v), want group_max_parked's 10", n, err)
		}
		if st, err := p.TopicStats(ctx, "idle"); err != nil || st.GroupsForgotten != 15 {
			t.Fatalf("stats say %d groups forgotten (%v), want 15", st.GroupsForgotten, err)
		}
		// g0 was forgotten (its token came first): it is served at once;
		// g24 is still held to its rate.
		pushGroup(t, p, ctx, "idle", "g0", 1)
		pushGroup(t, p, ctx, "idle", "g24", 1)
		if got := popBodies(t, p, ctx, "idle", 2); len(got) != 1 || got[0] != "g0" {
			t.Fatalf("popped %q, want g0 only", got)
		}
		checkStore(t, p, ctx)
	})
	t.Run("idle groups whose token came leave as others park", func(t *testing.T) {
		p, ctx := newPool(t)
		if err := p.SetTopicConfig(ctx, "fast", job.TopicConfig{"group_rate": "20"}); err != nil { // a token each 50 ms
			t.Fatal(err)
		}
		ring := p.keys.tag(p.keys.bucketOf("fast")) + ":group_ring:fast"
		for _, g := range []string{"a", "b", "c"} {
			pushGroup(t, p, ctx, "fast", g, 1)
		}
		popBodies(t, p, ctx, "fast", 3)
		time.Sleep(100 * time.Millisecond) // past a, b and c's tokens: a slow machine only sleeps longer
		pushGroup(t, p, ctx, "fast", "d", 1)
		mustPop(t, p, ctx, "fast")
		pushGroup(t, p, ctx, "fast", "e", 1)
		mustPop(t, p, ctx, "fast")
		left, err := p.client.Do(ctx, p.client.B().Zrange().Key(ring).Min("0").Max("-1").Build()).AsStrSlice()
		if err != nil || !slices.Contains(left, "e") || slices.Contains(left, "a") || slices.Contains(left, "b") || slices.Contains(left, "c") {
			t.Fatalf("the ring holds %q (%v), want e and not a, b, c", left, err)
		}
		checkStore(t, p, ctx)
	})
	t.Run("a job for an idle group waits for its token", func(t *testing.T) {
		p, ctx := newPool(t)
		if err := p.SetTopicConfig(ctx, "wait", job.TopicConfig{"group_rate": "0.001"}); err != nil {
			t.Fatal(err)
		}
		pushGroup(t, p, ctx, "wait", "a", 1)
		mustPop(t, p, ctx, "wait")
		pushGroup(t, p, ctx, "wait", "a", 1)
		pushGroup(t, p, ctx, "wait", "b", 1)
		if got := popBodies(t, p, ctx, "wait", 2); len(got) != 1 || got[0] != "b" {
			t.Fatalf("popped %q, want b only: a waits for its token", got)
		}
		r, err := p.Pop(ctx, []string{"wait"})
		if err != nil || r.Job != nil || r.PauseWait < 900*time.Second {
			t.Fatalf("a's job: %+v %v, want held for about 1,000 s", r, err)
		}
		if err := p.SetTopicConfig(ctx, "wait", job.TopicConfig{"group_rate": ""}); err != nil { // unparks a
			t.Fatal(err)
		}
		if got := popBodies(t, p, ctx, "wait", 2); len(got) != 1 || got[0] != "a" {
			t.Fatalf("after the unpark: %q", got)
		}
		checkStore(t, p, ctx)
	})
	t.Run("a held group whose job changes priority stays held", func(t *testing.T) {
		// From an attack: at group_max_parked, the change took the group's
		// last ready job out and back, and its hold was the one forgotten.
		p, ctx := newPool(t)
		if err := p.SetTopicConfig(ctx, "pri", job.TopicConfig{"group_rate": "0.000001", "group_max_parked": "2"}); err != nil {
			t.Fatal(err)
		}
		pushGroup(t, p, ctx, "pri", "a", 2)
		mustPop(t, p, ctx, "pri") // a is held, one job ready
		for _, g := range []string{"b0", "b1"} {
			pushGroup(t, p, ctx, "pri", g, 1)
			mustPop(t, p, ctx, "pri") // idle, their tokens after a's
		}
		peeked, err := p.PeekTopic(ctx, "pri", job.Ready)
		if err != nil || peeked == nil {
			t.Fatalf("peek: %+v %v", peeked, err)
		}
		pri := uint32(5)
		if _, err := p.UpdateJob(ctx, strconv.FormatUint(peeked.ID, 10), job.Update{Priority: &pri}); err != nil {
			t.Fatal(err)
		}
		if j := mustPop(t, p, ctx, "pri"); j != nil {
			t.Fatalf("a's job went 11 days early: %+v", j)
		}
		checkStore(t, p, ctx)
	})
	t.Run("settings written again as they were hold every group", func(t *testing.T) {
		// From an attack: a restart with the same conf.ini, or a PUT of
		// the value a setting has, let every held group go at once.
		p, ctx := newPool(t)
		write := func(parked string) {
			t.Helper()
			if err := p.ApplyTopicConfig(ctx, job.TopicConfig{}, map[string]job.TopicConfig{"same": {"group_rate": "0.001"}}); err != nil {
				t.Fatal(err)
			}
			if err := p.SetTopicConfig(ctx, "same", job.TopicConfig{"group_max_parked": parked}); err != nil {
				t.Fatal(err)
			}
		}
		write("1000")
		pushGroup(t, p, ctx, "same", "a", 2)
		mustPop(t, p, ctx, "same")
		write("1000") // a restart, or a reload and a PUT that change nothing
		if j := mustPop(t, p, ctx, "same"); j != nil {
			t.Fatalf("a's next job went before its token: %+v", j)
		}
		write("999") // a change lets the held groups back
		if j := mustPop(t, p, ctx, "same"); j == nil {
			t.Fatal("a change of a group setting did not let the held group back")
		}
		checkStore(t, p, ctx)
	})
	t.Run("a take is not held by group_max_reserved", func(t *testing.T) {
		p, ctx := newPool(t)
		if err := p.SetTopicConfig(ctx, "tk", job.TopicConfig{"group_max_reserved": "1"}); err != nil {
			t.Fatal(err)
		}
		pushGroup(t, p, ctx, "tk", "a", 2)
		mustPop(t, p, ctx, "tk")
		if got, err := p.Take(ctx, []string{"tk"}); err != nil || got.Job == nil {
			t.Fatalf("take: %+v %v", got, err)
		}
		checkStore(t, p, ctx)
	})
	t.Run("group_from keeps long numbers whole", func(t *testing.T) {
		p, ctx := newPool(t)
		if err := p.SetTopicConfig(ctx, "num", job.TopicConfig{"group_from": "tenant"}); err != nil {
			t.Fatal(err)
		}
		for _, body := range []string{`{"tenant":100000000000001}`, `{"tenant":100000000000002}`, `{"tenant":1.5}`} {
			mustPush(t, p, ctx, job.Spec{Topic: "num", Body: body, TTR: time.Minute})
		}
		groups := map[string]bool{}
		for range 3 {
			groups[mustPop(t, p, ctx, "num").Group] = true
		}
		if !groups["100000000000001"] || !groups["100000000000002"] || !groups[""] {
			t.Fatalf("groups %v", groups)
		}
	})
}
