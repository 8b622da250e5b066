package pool

import (
	"fmt"
	"strconv"
	"testing"
)

// plainLife is what a plain job's life (a push, a pop and an ack, one job a
// call, on a topic that sets nothing) asks of Redis, by what each command
// is for: issue 50's first row, "Redis commands a plain job's life, one
// job a call", counted here as docs/PERFORMANCE.md counts it ("A plain
// job's life: 24 Redis commands"). Counters are HINCRBY (the bucket's and the topic's
// counts and totals), the clock TIME, settings the HGETALL of the bucket's
// copy of the default settings (a plain push's EXISTS of it: plain.go);
// the data model is the rest: the record, the
// state sets, the due hint and the wake-up (30 in all on the day issue 50
// was filed, as it says, with 12 counters; 25 since the totals left the
// calls, 7 counters: totals.go; 24 since a push takes the plain path, its
// HMGET and HSET one HSETNX: plain.go). A change that lowers a count lowers it
// here and in that table; one that raises it fails here.
var plainLife = map[string]int64{"counters": 7, "clock": 2, "settings": 3, "data model": 12}

// commandPurpose sorts a command a plain life makes into plainLife's rows.
func commandPurpose(name string) string {
	switch name {
	case "hincrby":
		return "counters"
	case "time":
		return "clock"
	case "hgetall", "exists":
		return "settings"
	}
	return "data model"
}

func TestPlainLifeCommands(t *testing.T) {
	p, ctx := newPool(t)
	noneWaiting(p, ctx, 0)       // one consumer, and no other waiting: no pop asks whether more are ready
	mustPush(t, p, ctx, costJob) // the topic exists, as on a warmed broker
	if _, err := p.Pop(ctx, []string{costJob.Topic}); err != nil {
		t.Fatal(err)
	}
	if err := p.client.Do(ctx, p.client.B().ConfigResetstat().Build()).Error(); err != nil {
		t.Fatal(err)
	}
	id := mustPush(t, p, ctx, costJob)
	popped, err := p.Pop(ctx, []string{costJob.Topic})
	if err != nil || popped.Job == nil || popped.Job.ID != id {
		t.Fatalf("pop: %+v %v, want job %d", popped, err, id)
	}
	if err := p.Ack(ctx, strconv.FormatUint(id, 10), popped.Job.Attempt(), ""); err != nil {
		t.Fatal(err)
	}
	stats := commandStats(t, p, ctx)
	if calls, _ := scriptCalls(stats); calls != 3 {
		t.Errorf("%d script calls, want 3 (one a push, a pop and an ack)", calls)
	}
	got := map[string]int64{}
	detail := map[string]string{}
	for name, s := range stats {
		if isScriptOrOwnRead(name) {
			continue
		}
		purpose := commandPurpose(name)
		got[purpose] += s[0]
		detail[purpose] += fmt.Sprintf(" %s %d", name, s[0])
	}
	var total int64
	for purpose, want := range plainLife {
		total += got[purpose]
		if got[purpose] != want {
			t.Errorf("%s: %d commands (%s), want %d", purpose, got[purpose], detail[purpose], want)
		}
	}
	t.Logf("a plain job's life: %d commands: %v", total, got)
}
