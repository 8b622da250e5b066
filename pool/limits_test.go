package pool

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gmq/gmq/job"
)

// A topic's rate lets burst jobs go at once, then one a token; a pop held
// back says when the next token comes, and the topic's stats count it.
func TestRateLimitsPops(t *testing.T) {
	p, ctx := newPool(t)
	// 1 a second: the burst's pops and the pop past it must come before the
	// next token; a second is the margin for a loaded machine.
	if err := p.SetTopicConfig(ctx, "r", job.TopicConfig{"rate": "1", "burst": "3"}); err != nil {
		t.Fatal(err)
	}
	for range 6 {
		mustPush(t, p, ctx, job.Spec{Topic: "r", Body: "x", TTR: time.Minute})
	}
	for i := range 3 {
		if mustPop(t, p, ctx, "r") == nil {
			t.Fatalf("pop %d of the burst found nothing", i+1)
		}
	}
	got, err := p.Pop(ctx, []string{"r"})
	if err != nil || got.Job != nil {
		t.Fatalf("a pop past the burst: %+v, %v", got.Job, err)
	}
	if got.PauseWait <= 0 || got.PauseWait > time.Second {
		t.Fatalf("held back by a rate of 1/s, the pop says wait %v", got.PauseWait)
	}
	time.Sleep(got.PauseWait)
	if mustPop(t, p, ctx, "r") == nil {
		t.Fatalf("no job after the wait for the next token")
	}
	st, err := p.TopicStats(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	if st.Tokens != 0 || st.Limited != 1 || st.Settings["rate"] != "1" {
		t.Fatalf("stats: tokens %d, limited %d, settings %v", st.Tokens, st.Limited, st.Settings)
	}
	// A batch pop takes what the tokens allow, no more.
	time.Sleep(2500 * time.Millisecond) // two tokens
	got, err = p.PopN(ctx, []string{"r"}, 5)
	if err != nil || got.Job == nil || len(got.Rest) != 1 {
		t.Fatalf("PopN(5) with two tokens: %+v, %d more, %v", got.Job, len(got.Rest), err)
	}
}

// max_reserved holds pops back while that many jobs are reserved, with no
// time to wait for (a job leaving the reserved set frees the slot), and
// does not hold back a pop that removes its job (Take).
func TestMaxReservedHoldsPops(t *testing.T) {
	p, ctx := newPool(t)
	if err := p.SetTopicConfig(ctx, "c", job.TopicConfig{"max_reserved": "2"}); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		mustPush(t, p, ctx, job.Spec{Topic: "c", Body: "x", TTR: time.Minute})
	}
	a, b := mustPop(t, p, ctx, "c"), mustPop(t, p, ctx, "c")
	if a == nil || b == nil {
		t.Fatal("the first two pops found nothing")
	}
	got, err := p.PopN(ctx, []string{"c"}, 3)
	if err != nil || got.Job != nil || got.PauseWait != 0 {
		t.Fatalf("a pop at max_reserved: %+v, wait %v, %v", got.Job, got.PauseWait, err)
	}
	if got, err := p.Take(ctx, []string{"c"}); err != nil || got.Job == nil {
		t.Fatalf("a take at max_reserved: %+v, %v", got.Job, err)
	}
	if err := p.Delete(ctx, num(a.ID), a.Attempt()); err != nil {
		t.Fatal(err)
	}
	if mustPop(t, p, ctx, "c") == nil {
		t.Fatal("no pop after an ack freed a slot")
	}
	if _, err := p.Bury(ctx, num(b.ID), b.Attempt(), job.DefaultPriority); err != nil {
		t.Fatal(err)
	}
	if mustPop(t, p, ctx, "c") == nil {
		t.Fatal("no pop after a bury freed a slot")
	}
	st, err := p.TopicStats(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	if st.Reserved != 2 || st.Limited != 1 || st.Tokens != -1 {
		t.Fatalf("stats: reserved %d, limited %d, tokens %d", st.Reserved, st.Limited, st.Tokens)
	}
}

// A pattern's settings ([topic.crawl/*]) hold for every topic it matches, in
// every bucket, the most specific on top and each topic's own above them;
// a reload without it takes it away.
func TestTopicPatterns(t *testing.T) {
	p, ctx := newPool(t)
	conf := map[string]job.TopicConfig{
		"crawl/*":    {"max_reserved": "1", "rate": "1000"},
		"crawl/big*": {"max_reserved": "2"},
		"crawl/big1": {"burst": "3"},
		"v.1$(x)*":   {"max_reserved": "1"}, // Lua's magic characters, matched as themselves
		// Several '*'s and a long name that misses them: a backtracking match
		// took Redis seconds (a new topic's push, its pops, its timer).
		"*_*_*_*_*_dlq": {"max_reserved": "1"},
	}
	if err := p.ApplyTopicConfig(ctx, job.TopicConfig{"max_items": "100"}, conf); err != nil {
		t.Fatal(err)
	}
	l, err := p.TopicConfig(ctx, "crawl/big1")
	if err != nil {
		t.Fatal(err)
	}
	want := job.TopicConfig{"max_items": "100", "max_reserved": "2", "rate": "1000", "burst": "3"}
	if !reflect.DeepEqual(l.Effective, want) || l.Patterns["max_reserved"] != "2" || len(l.Defaults) != 1 {
		t.Fatalf("crawl/big1's layers: %+v", l)
	}
	for topic, most := range map[string]int{"crawl/a": 1, "crawl/big1": 2, "other": 4, "v.1$(x)a": 1, "vx1$(x)a": 4} {
		for range 4 {
			mustPush(t, p, ctx, job.Spec{Topic: topic, Body: "x", TTR: time.Minute})
		}
		got := 0
		for mustPop(t, p, ctx, topic) != nil {
			got++
		}
		if got != most {
			t.Errorf("%s: %d pops before its limit held them back, want %d", topic, got, most)
		}
	}
	long := strings.Repeat("_", 190)
	start := time.Now()
	mustPush(t, p, ctx, job.Spec{Topic: long, Body: "x", TTR: time.Minute})
	// Milliseconds; 2 s is the margin for a loaded machine, still far below
	// the backtracking's seconds a match.
	if mustPop(t, p, ctx, long) == nil || time.Since(start) > 2*time.Second {
		t.Errorf("a push and a pop of a 190-byte name that misses a pattern of five '*'s took %v", time.Since(start))
	}
	if err := p.ApplyTopicConfig(ctx, nil, nil); err != nil {
		t.Fatal(err)
	}
	if l, err := p.TopicConfig(ctx, "crawl/a"); err != nil || len(l.Effective) != 0 || len(l.Patterns) != 0 {
		t.Fatalf("after a reload without patterns: %+v %v", l, err)
	}
	if mustPop(t, p, ctx, "crawl/a") == nil {
		t.Fatal("crawl/a is still held back after its pattern went")
	}
}

// A wake-up Go sends (WakeEveryone) reads back as the scripts' do.
func TestWakeMessage(t *testing.T) {
	w := Wake{Origin: everyone, N: 7, Topic: "crawl/a b"}
	if got, err := parseWake(w.String()); err != nil || got != w {
		t.Fatalf("%q reads back as %+v, %v", w.String(), got, err)
	}
}
