package pool

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gmq/gmq/job"
)

// pushGroup pushes n jobs of group g (none when "") to topic, their bodies g.
func pushGroup(t *testing.T, p *Pool, ctx context.Context, topic, g string, n int) {
	t.Helper()
	specs := make([]job.Spec, n)
	for i := range specs {
		specs[i] = job.Spec{Topic: topic, Body: g, Group: g, TTR: time.Minute, Priority: job.DefaultPriority}
	}
	if _, errs := p.PushBatch(ctx, specs); errs[0] != nil {
		t.Fatalf("push %d of group %q: %v", n, g, errs[0])
	}
}

// popBodies pops up to n jobs of topic one at a time and returns their bodies.
func popBodies(t *testing.T, p *Pool, ctx context.Context, topic string, n int) []string {
	t.Helper()
	var out []string
	for range n {
		j := mustPop(t, p, ctx, topic)
		if j == nil {
			break
		}
		out = append(out, j.Body)
	}
	return out
}

// Pops take a grouped topic's groups in turn, whatever their sizes: a group
// of 1,000 does not hold back groups of 3, and jobs without a group are one
// group more.
func TestGroupsRoundRobin(t *testing.T) {
	p, ctx := newPool(t)
	pushGroup(t, p, ctx, "fair", "heavy", 1000)
	for _, g := range []string{"a", "b", "c"} {
		pushGroup(t, p, ctx, "fair", g, 3)
	}
	pushGroup(t, p, ctx, "fair", "", 2)
	served := map[string]int{}
	for i, body := range popBodies(t, p, ctx, "fair", 15) {
		served[body]++
		if i < 5 && served[body] > 1 {
			t.Fatalf("pop %d took %q a second time before every group had one", i, body)
		}
	}
	if served["a"] != 3 || served["b"] != 3 || served["c"] != 3 || served[""] != 2 || served["heavy"] != 4 {
		t.Fatalf("15 pops served %v, want every light group whole and heavy the rest", served)
	}
	checkStore(t, p, ctx)
}

// Priority orders the jobs within a group, and only there.
func TestGroupPriority(t *testing.T) {
	p, ctx := newPool(t)
	for _, s := range []job.Spec{
		{Topic: "pri", Body: "x-late", Group: "x", Priority: 9},
		{Topic: "pri", Body: "x-first", Group: "x", Priority: 1},
		{Topic: "pri", Body: "y-only", Group: "y", Priority: 5},
	} {
		s.TTR = time.Minute
		mustPush(t, p, ctx, s)
	}
	got := popBodies(t, p, ctx, "pri", 3)
	if len(got) != 3 || got[0] != "x-first" || got[1] != "y-only" || got[2] != "x-late" {
		t.Fatalf("popped %q", got)
	}
	checkStore(t, p, ctx)
}

// group_max_reserved = 1: a group's jobs go one at a time, in order, and a
// group held back does not hold back the others.
func TestGroupMaxReserved(t *testing.T) {
	p, ctx := newPool(t)
	if err := p.SetTopicConfig(ctx, "serial", job.TopicConfig{"group_max_reserved": "1"}); err != nil {
		t.Fatal(err)
	}
	pushGroup(t, p, ctx, "serial", "one", 3)
	pushGroup(t, p, ctx, "serial", "two", 1)
	first, second := mustPop(t, p, ctx, "serial"), mustPop(t, p, ctx, "serial")
	if first == nil || second == nil || first.Group == second.Group {
		t.Fatalf("two pops: %+v, %+v: want one of each group", first, second)
	}
	if j := mustPop(t, p, ctx, "serial"); j != nil {
		t.Fatalf("a third pop took %+v while each group has one reserved", j)
	}
	one := first
	if one.Group != "one" {
		one = second
	}
	if err := p.Delete(ctx, num(one.ID), one.Attempt()); err != nil {
		t.Fatal(err)
	}
	if j := mustPop(t, p, ctx, "serial"); j == nil || j.Group != "one" {
		t.Fatalf("after the ack: %+v, want group one's next", j)
	}
	checkStore(t, p, ctx)
}

// group_rate spaces one group's deliveries; the others go meanwhile.
func TestGroupRate(t *testing.T) {
	p, ctx := newPool(t)
	// 1 a second: the pops must come before the group's next token; a
	// second is the margin for a loaded machine.
	if err := p.SetTopicConfig(ctx, "paced", job.TopicConfig{"group_rate": "1"}); err != nil {
		t.Fatal(err)
	}
	pushGroup(t, p, ctx, "paced", "slow", 3)
	pushGroup(t, p, ctx, "paced", "other", 1)
	got := popBodies(t, p, ctx, "paced", 3)
	if len(got) != 2 {
		t.Fatalf("at once: %q, want one of each group", got)
	}
	r, err := p.Pop(ctx, []string{"paced"})
	if err != nil || r.Job != nil || r.PauseWait <= 0 || r.PauseWait > time.Second || r.HeldBy != "paced" {
		t.Fatalf("held back: %+v %v, want a wait of up to 1 s", r, err)
	}
	time.Sleep(r.PauseWait)
	if j := mustPop(t, p, ctx, "paced"); j == nil || j.Group != "slow" {
		t.Fatalf("after the wait: %+v", j)
	}
	checkStore(t, p, ctx)
}

// A topic with ready jobs that becomes grouped puts them in the group ”;
// deletes, changes of priority and delay, expiry and flushes keep the
// queues right, and a group leaves the ring with its last job.
func TestGroupsKeptRight(t *testing.T) {
	p, ctx := newPool(t)
	pushGroup(t, p, ctx, "mix", "", 3) // before the topic is grouped
	pushGroup(t, p, ctx, "mix", "g", 2)
	checkStore(t, p, ctx)
	a := mustPush(t, p, ctx, job.Spec{Topic: "mix", Body: "a", Group: "h", TTR: time.Minute})
	pri := uint32(1)
	if _, err := p.UpdateJob(ctx, num(a), job.Update{Priority: &pri}); err != nil {
		t.Fatal(err)
	}
	checkStore(t, p, ctx)
	delay := time.Hour
	if _, err := p.UpdateJob(ctx, num(a), job.Update{Delay: &delay}); err != nil {
		t.Fatal(err)
	}
	checkStore(t, p, ctx)
	if err := p.Delete(ctx, num(a), 0); err != nil {
		t.Fatal(err)
	}
	mustPush(t, p, ctx, job.Spec{Topic: "mix", Body: "gone soon", Group: "e", Expires: time.Now().Add(20 * time.Millisecond)})
	time.Sleep(40 * time.Millisecond)
	served := map[string]int{}
	for _, b := range popBodies(t, p, ctx, "mix", 10) {
		served[b]++
	}
	if served[""] != 3 || served["g"] != 2 || len(served) != 2 {
		t.Fatalf("served %v", served)
	}
	checkStore(t, p, ctx)
	pushGroup(t, p, ctx, "mix", "f", 4)
	if _, err := p.Purge(ctx, "mix", job.Ready, job.Reserved); err != nil {
		t.Fatal(err)
	}
	checkStore(t, p, ctx)
	n, err := p.client.Do(ctx, p.client.B().Zcard().Key(p.keys.tag(p.keys.bucketOf("mix"))+":group_ring:mix").Build()).AsInt64()
	if err != nil || n != 0 {
		t.Fatalf("the ring holds %d groups after the flush (%v)", n, err)
	}
}

// group_from takes a job's group from a field of its JSON body when the
// push names none (beanstalkd's and memcache's puts).
func TestGroupFrom(t *testing.T) {
	p, ctx := newPool(t)
	if err := p.SetTopicConfig(ctx, "jsonish", job.TopicConfig{"group_from": "tenant"}); err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{`{"tenant":"t1","n":1}`, `{"tenant":"t1","n":2}`, `{"tenant":42}`, `not json`, `{"tenant":{"deep":1}}`} {
		mustPush(t, p, ctx, job.Spec{Topic: "jsonish", Body: body, TTR: time.Minute})
	}
	groups := map[string]int{}
	for range 5 {
		groups[mustPop(t, p, ctx, "jsonish").Group]++
	}
	if groups["t1"] != 2 || groups["42"] != 1 || groups[""] != 2 {
		t.Fatalf("groups %v", groups)
	}
	checkStore(t, p, ctx)
}

// A batch's groups take their turns in the batch's order (its pushes are
// queued for the scripts in order), as a new user tried: a-1, a-2, a-3 of
// one group and b-1 of another pop a-1, then b-1.
func TestGroupsOfABatchInOrder(t *testing.T) {
	p, ctx := newPool(t)
	for n := range 10 {
		topic := "order" + strconv.Itoa(n)
		specs := []job.Spec{{Body: "a-1", Group: "a"}, {Body: "a-2", Group: "a"}, {Body: "a-3", Group: "a"}, {Body: "b-1", Group: "b"}}
		for i := range specs {
			specs[i].Topic, specs[i].TTR = topic, time.Minute
		}
		if _, errs := p.PushBatch(ctx, specs); errs[0] != nil {
			t.Fatal(errs[0])
		}
		if got := popBodies(t, p, ctx, topic, 4); len(got) != 4 || got[0] != "a-1" || got[1] != "b-1" || got[2] != "a-2" {
			t.Fatalf("try %d: popped %q", n, got)
		}
	}
}

// group_from holds a body's field to the rule a producer's own group is
// held to on every front end (job.ValidateGroup): a beanstalkd body's
// {"tenant":"\xff"} made a group HTTP would refuse, and two such groups
// both showed as "�". Whole numbers make a group below 2^53 only.
func TestGroupFromFollowsTheGroupRule(t *testing.T) {
	p, ctx := newPool(t)
	if err := p.SetTopicConfig(ctx, "utf", job.TopicConfig{"group_from": "tenant"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, field string // field: the JSON value, as sent
		group       string // "" : no group
	}{
		{"UTF-8", `"tenant-α日本"`, "tenant-α日本"},
		{"escaped UTF-8", `"\u00e9"`, "é"},
		{"a byte that starts nothing", "\"\xff\"", ""},
		{"a lone continuation byte", "\"a\x80\"", ""},
		{"an overlong slash", "\"\xc0\xaf\"", ""},
		{"an overlong three-byte form", "\"\xe0\x80\xaf\"", ""},
		{"a surrogate's bytes", "\"\xed\xa0\x80\"", ""},
		{"an escaped lone surrogate", `"\ud800"`, ""},
		{"past U+10FFFF", "\"\xf4\x90\x80\x80\"", ""},
		{"the last code point", "\"\xf4\x8f\xbf\xbf\"", "\xf4\x8f\xbf\xbf"},
		{"cut short", "\"\xe2\x82\"", ""},
		{"DEL", "\"a\x7f\"", ""},
		{"200 bytes", `"` + strings.Repeat("é", 100) + `"`, strings.Repeat("é", 100)},
		{"201 bytes", `"x` + strings.Repeat("é", 100) + `"`, ""},
		{"2^53 - 1", `9007199254740991`, "9007199254740991"},
		{"2^53", `9007199254740992`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if (job.ValidateGroup(tc.group) == nil) != (tc.group != "") {
				t.Fatalf("the case disagrees with job.ValidateGroup(%q)", tc.group)
			}
			mustPush(t, p, ctx, job.Spec{Topic: "utf", Body: `{"tenant":` + tc.field + `}`, TTR: time.Minute})
			if got := mustPop(t, p, ctx, "utf"); got.Group != tc.group {
				t.Fatalf("group %q, want %q", got.Group, tc.group)
			}
		})
	}
	checkStore(t, p, ctx)
}
