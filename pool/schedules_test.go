package pool

import (
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/gmq/gmq/job"
)

// A due schedule fired by several brokers' timers at once pushes one job,
// and moves on to its next fire; with overlap skip, a fire while its last
// job still waits pushes none.
func TestScheduleFiresOnce(t *testing.T) {
	p, ctx := newPool(t)
	others := []*Pool{p, New(p.client, p.opts), New(p.client, p.opts)}
	spec := job.ScheduleSpec{Cron: "0 0 * * *", Job: job.Spec{Topic: "cron", Body: "tick", TTR: time.Minute, Priority: 1}}
	due := func(overlap string) {
		t.Helper()
		spec.Overlap = overlap
		if err := p.WriteSchedule(ctx, "nightly", spec, "", `{"cron":"0 0 * * *"}`, time.Now().Add(-time.Millisecond), false); err != nil {
			t.Fatal(err)
		}
	}
	fireAll := func() {
		t.Helper()
		var wg sync.WaitGroup
		for _, q := range others {
			wg.Go(func() {
				if _, _, err := q.Tick(ctx, q.BucketOf("cron"), scheduleDue+"nightly"); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	due("")
	fireAll()
	st, err := p.TopicStats(ctx, "cron")
	if err != nil || st.Ready != 1 {
		t.Fatalf("three timers fired it: %d ready (%v), want 1", st.Ready, err)
	}
	all, err := p.Schedules(ctx)
	if err != nil || len(all) != 1 || all[0].Fires != 1 || !all[0].Next.After(time.Now()) || all[0].LastID == 0 {
		t.Fatalf("the schedule after its fire: %+v %v", all, err)
	}
	due(job.OverlapSkip)
	fireAll()
	if st, _ := p.TopicStats(ctx, "cron"); st.Ready != 1 {
		t.Fatalf("overlap skip pushed while the last job waits: %d ready", st.Ready)
	}
	if all, _ := p.Schedules(ctx); all[0].Skips != 1 {
		t.Fatalf("skips %d, want 1", all[0].Skips)
	}
	if err := p.DeleteSchedule(ctx, "nightly"); err != nil {
		t.Fatal(err)
	}
	if topics, _, _ := p.DueTopics(ctx, p.BucketOf("cron"), 10); len(topics) != 0 {
		t.Fatalf("due after the delete: %v", topics)
	}
	checkStore(t, p, ctx)
}

// A paused schedule is not due; a schedule whose topic moved to another
// bucket leaves the old one.
func TestSchedulePausedAndMoved(t *testing.T) {
	p, ctx := newPool(t)
	spec := job.ScheduleSpec{Cron: "* * * * *", Job: job.Spec{Topic: "a", Body: "x"}, Paused: true}
	if err := p.WriteSchedule(ctx, "s", spec, "", "", time.Time{}, false); err != nil {
		t.Fatal(err)
	}
	if topics, _, _ := p.DueTopics(ctx, p.BucketOf("a"), 10); len(topics) != 0 {
		t.Fatalf("a paused schedule is due: %v", topics)
	}
	var other string
	for _, name := range []string{"b", "c", "d", "e", "f", "g", "h"} {
		if p.BucketOf(name) != p.BucketOf("a") {
			other = name
			break
		}
	}
	spec.Job.Topic, spec.Paused = other, false
	if err := p.WriteSchedule(ctx, "s", spec, "", "", time.Now().Add(time.Hour), false); err != nil {
		t.Fatal(err)
	}
	n, err := p.client.Do(ctx, p.client.B().Exists().Key(p.keys.schedule("a", "s")).Build()).AsInt64()
	if err != nil || n != 0 {
		t.Fatalf("the old bucket's hash is left: %d %v", n, err)
	}
	if all, err := p.Schedules(ctx); err != nil || len(all) != 1 || all[0].Spec.Job.Topic != other {
		t.Fatalf("schedules: %+v %v", all, err)
	}
}

// A fire its push refuses before the fire is counted (a unique job on a
// topic with fanout children) moves the schedule on all the same, counted
// refused: left due, every broker's timer tried it again at once, for ever.
func TestScheduleFireRefusedEarlyMovesOn(t *testing.T) {
	p, ctx := newPool(t)
	if _, err := p.TopicConfig(ctx, "fp+a"); err != nil { // fp gets a fanout child
		t.Fatal(err)
	}
	spec := job.ScheduleSpec{Cron: "0 0 * * *", Job: job.Spec{Topic: "fp", Body: "u",
		Unique: &job.Unique{Key: "k", For: time.Second, Mode: job.UniqueReject}}}
	if err := p.WriteSchedule(ctx, "uf", spec, "", "", time.Now().Add(-time.Millisecond), false); err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.Tick(ctx, p.BucketOf("fp"), scheduleDue+"uf"); err != nil {
		t.Fatal(err)
	}
	sc, err := p.Schedule(ctx, "uf")
	if err != nil || sc.Refused != 1 || !sc.Next.After(time.Now()) {
		t.Fatalf("after a refused fire: %+v %v", sc, err)
	}
	if topics, _, _ := p.DueTopics(ctx, p.BucketOf("fp"), 10); len(topics) != 0 {
		t.Fatalf("still due: %v", topics)
	}
}

// An orphan (a hash in a bucket the index does not name, left by a write
// cut short) is dropped when its due entry comes, unless it was written
// less than a lock's lifetime ago: then it may be a write's new hash, not
// yet named, and is only put off. A write or delete of the name sweeps every bucket,
// and a kept next fire is made due again (issue 31: an orphan's stale next
// with no due entry never fired).
func TestScheduleOrphans(t *testing.T) {
	p, ctx := newPool(t)
	spec := job.ScheduleSpec{Cron: "0 3 * * *", Job: job.Spec{Topic: "a", Body: "x"}}
	if err := p.WriteSchedule(ctx, "s", spec, "", "", time.Now().Add(time.Hour), false); err != nil {
		t.Fatal(err)
	}
	other := -1
	for b := range p.opts.Buckets {
		if b != p.BucketOf("a") {
			other = b
			break
		}
	}
	orphan := func(next time.Time) { // what a cut-short move into bucket other leaves
		t.Helper()
		data, _ := json.Marshal(spec)
		if err := scheduleScript.Exec(ctx, p.client, append(p.keys.withTopics(other), p.keys.scheduleIn(other, "s")),
			scheduleScript.args(p.opts.Origin, "set", "name", "s", "spec", string(data), "file", "", "run", "",
				"next", strconv.FormatInt(next.UnixMilli(), 10), "keep", "")).Error(); err != nil {
			t.Fatal(err)
		}
	}
	exists := func() bool {
		n, err := p.client.Do(ctx, p.client.B().Exists().Key(p.keys.scheduleIn(other, "s")).Build()).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	dueAt := func() float64 {
		score, err := p.client.Do(ctx, p.client.B().Zscore().Key(p.keys.due(other)).Member(scheduleDue+"s").Build()).AsFloat64()
		if err != nil && !rueidis.IsRedisNil(err) {
			t.Fatal(err)
		}
		return score
	}

	orphan(time.Now().Add(-time.Second)) // just written: perhaps a write under way
	before := dueAt()
	if _, _, err := p.fireSchedule(ctx, other, "s"); err != nil {
		t.Fatal(err)
	}
	if !exists() || dueAt() != before+float64(orphanPutOff.Milliseconds()) {
		t.Fatalf("during a write: exists %v, due %v (was %v): want it kept and put off", exists(), dueAt(), before)
	}
	// Written longer ago than a write may hold the name: an orphan.
	old := strconv.FormatInt(time.Now().Add(-2*scheduleLockTTL).UnixMilli(), 10)
	if err := p.client.Do(ctx, p.client.B().Hset().Key(p.keys.scheduleIn(other, "s")).FieldValue().FieldValue("written", old).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.fireSchedule(ctx, other, "s"); err != nil {
		t.Fatal(err)
	}
	if exists() || dueAt() != 0 {
		t.Fatal("the orphan is still there when its due entry came")
	}

	orphan(time.Now().Add(-time.Second))
	if err := p.WriteSchedule(ctx, "s", spec, "", "", time.Now().Add(time.Hour), true); err != nil {
		t.Fatal(err)
	}
	if exists() {
		t.Fatal("a write left the orphan")
	}
	orphan(time.Now().Add(time.Hour))
	if err := p.DeleteSchedule(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if exists() {
		t.Fatal("a delete left the orphan")
	}
	if err := p.DeleteSchedule(ctx, "s"); !errors.Is(err, job.ErrNotFound) {
		t.Fatalf("a second delete: %v, want not found", err)
	}

	// A write that keeps the next fire of the hash it finds makes it due.
	spec.Job.Topic = "a"
	if err := p.WriteSchedule(ctx, "s", spec, "", "", time.Now().Add(-time.Second), false); err != nil {
		t.Fatal(err)
	}
	if err := p.client.Do(ctx, p.client.B().Zrem().Key(p.keys.due(p.BucketOf("a"))).Member(scheduleDue+"s").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if err := p.WriteSchedule(ctx, "s", spec, "", "", time.Now().Add(time.Hour), true); err != nil {
		t.Fatal(err)
	}
	if topics, _, _ := p.DueTopics(ctx, p.BucketOf("a"), 10); len(topics) == 0 {
		t.Fatal("a kept next fire in the past is not due")
	}
	checkStore(t, p, ctx)
}

// A change that keeps when a schedule fires carries its next fire when it
// moves to another bucket, taken from the old bucket in the script that
// removes it there (an attack found moves that lost a due fire, and made
// one twice when the old bucket's timer fired it meanwhile).
func TestScheduleMoveKeepsItsNextFire(t *testing.T) {
	p, ctx := newPool(t)
	spec := job.ScheduleSpec{Cron: "*/5 * * * * *", Job: job.Spec{Topic: "a", Body: "x"}}
	due := time.Now().Add(-time.Second).Truncate(time.Millisecond) // a fire due, not yet made
	if err := p.WriteSchedule(ctx, "m", spec, "", "", due, false); err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{"b", "c", "d", "e", "f", "g", "h"} {
		if p.BucketOf(topic) != p.BucketOf("a") {
			spec.Job.Topic = topic
			break
		}
	}
	err := p.ChangeSchedule(ctx, "m", func(cur job.Schedule, found bool) (ScheduleWrite, error) {
		if !found || !cur.Next.Equal(due) {
			t.Errorf("the change saw %+v (found %v), want next %v", cur, found, due)
		}
		return ScheduleWrite{Spec: spec, Next: time.Now().Add(time.Hour), Keep: true}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s, err := p.Schedule(ctx, "m")
	if err != nil || s.Spec.Job.Topic != spec.Job.Topic || !s.Next.Equal(due) {
		t.Fatalf("moved: %+v %v, want topic %s and the due fire %v kept", s, err, spec.Job.Topic, due)
	}
	if topics, _, _ := p.DueTopics(ctx, p.BucketOf(spec.Job.Topic), 10); len(topics) == 0 {
		t.Fatal("the kept fire is not due in the new bucket")
	}
	if topics, _, _ := p.DueTopics(ctx, p.BucketOf("a"), 10); len(topics) != 0 {
		t.Fatalf("the old bucket still has it due: %v", topics)
	}
	// An error of the change writes nothing.
	if err := p.ChangeSchedule(ctx, "m", func(job.Schedule, bool) (ScheduleWrite, error) {
		return ScheduleWrite{}, job.ErrInvalid
	}); !errors.Is(err, job.ErrInvalid) {
		t.Fatalf("a change's error: %v", err)
	}
	checkStore(t, p, ctx)
}
