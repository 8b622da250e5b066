package pool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/gmq/gmq/job"
	"github.com/gmq/gmq/lua"
)

// Schedules (cron, leaderless). A schedule lives in the bucket of its job's
// topic: its hash (keys.schedule: the effective spec as JSON, its conf.ini
// and run-time layers, its next fire and what its fires did) and its next
// fire in the bucket's due zset as "@schedule NAME", so the bucket's timers
// on every broker find it due. The first timer there fires it: one push
// whose script advances the schedule only if its next fire is still the
// one the timer read (batch.lua fire_refusal), so each fire happens once
// however many brokers run, and a broker killed at the instant leaves it
// due for the others. gmq:schedules (keys.schedules) names each schedule's
// topic, to find its bucket.
//
// A write that moves a schedule to another bucket is three steps (its hash
// in the new bucket, the index, the old bucket's hash gone): the index is
// outside every bucket's slot, so no one script can do it. Writers of one
// name therefore take turns (lockSchedule), and each write ends by removing
// the schedule from every bucket but the one the index names (sweep), so a
// write cut short by a crash leaves no more than an orphan hash, unlisted,
// which the next write or delete of the name removes, and which a bucket
// timer removes when its due entry comes (fireSchedule).

// scheduleDue starts a schedule's member in its bucket's due zset (lib.lua SCHEDULE_DUE).
const scheduleDue = "@schedule "

// scheduleKeyArg and scheduleDueArg are where a push's schedule arguments
// are: its hash's place in KEYS, then due, next, name and overlap.
var (
	scheduleKeyArg = lua.OpArgIndex(opPush, "schedule_key")
	scheduleDueArg = lua.OpArgIndex(opPush, "schedule_due")
)

// scheduleFire is a push that is a schedule's fire (key "": a plain push).
type scheduleFire struct{ key, due, next, name, overlap string }

var scheduleScript = newFunction("schedule")

// Schedule fires' outcomes other than a job stored.
var (
	errFiredElsewhere = errors.New("fired by another broker")
	errSkipped        = errors.New("skipped: its last job is still waiting or reserved (overlap skip)")
)

// ScheduleWrite is what a change of a schedule stores: its effective
// spec, its layers (JSON objects, "" none) and its next fire (zero: none,
// paused). With Keep (nothing of when it fires changed), the next fire it
// has stays, wherever it moves.
type ScheduleWrite struct {
	Spec      job.ScheduleSpec
	File, Run string
	Next      time.Time
	Keep      bool
}

// ChangeSchedule changes schedule name under its lock: change gets the
// schedule as it is then (found false: there is none) and says what to
// store, so two changes of one name never lose each other's (a read, a
// merge and a write by each, in turn). An error of change's is returned as
// it is, and nothing is written.
func (p *Pool) ChangeSchedule(ctx context.Context, name string, change func(cur job.Schedule, found bool) (ScheduleWrite, error)) error {
	unlock, err := p.lockSchedule(ctx, name)
	if err != nil {
		return err
	}
	defer unlock()
	cur, err := p.Schedule(ctx, name)
	found := err == nil
	if err != nil && !errors.Is(err, job.ErrNotFound) {
		return err
	}
	w, err := change(cur, found)
	if err != nil {
		return err
	}
	return p.writeSchedule(ctx, name, w)
}

// WriteSchedule stores schedule name as w says, whatever it was (a test's
// or a store's own write; a change of what is there is ChangeSchedule's).
func (p *Pool) WriteSchedule(ctx context.Context, name string, spec job.ScheduleSpec, file, run string, next time.Time, keep bool) error {
	unlock, err := p.lockSchedule(ctx, name)
	if err != nil {
		return err
	}
	defer unlock()
	return p.writeSchedule(ctx, name, ScheduleWrite{Spec: spec, File: file, Run: run, Next: next, Keep: keep})
}

// writeSchedule stores w under the name's lock. A move to another bucket
// first takes the schedule out of its old one, in one script that also
// says its next fire then: a fire the old bucket's timer makes meanwhile
// either came before (and moved next on, which is what is carried) or
// finds no schedule, so a kept fire is neither lost nor made twice. Then
// the new bucket's hash, the index, and every other bucket swept. A write
// cut short after the first step leaves the schedule unnamed until the
// write is made again (its client saw it fail; conf.ini's come back at a
// reload).
func (p *Pool) writeSchedule(ctx context.Context, name string, w ScheduleWrite) error {
	data, err := json.Marshal(w.Spec)
	if err != nil {
		return fmt.Errorf("write schedule %q: %w", name, err)
	}
	to := p.keys.bucketOf(w.Spec.Job.Topic)
	next := epochMillis(w.Next)
	old, err := p.scheduleTopic(ctx, name)
	if err != nil {
		return err
	}
	keep := w.Keep // in the bucket it is in: the script keeps the next fire it finds
	if old != "" && p.keys.bucketOf(old) != to {
		was, err := scheduleScript.Exec(ctx, p.client, p.scheduleKeys(old, name), scheduleScript.args(p.caller(), "delete", "name", name)).AsInt64()
		if err != nil {
			return wrapRedis("write schedule: take it from its old bucket", err)
		}
		if w.Keep && was > 0 {
			next = was
		}
		keep = false // what the new bucket may hold is an orphan's, not its
	}
	if err := scheduleScript.Exec(ctx, p.client, p.scheduleKeys(w.Spec.Job.Topic, name),
		scheduleScript.args(p.caller(), "set", "name", name, "spec", string(data), "file", w.File, "run", w.Run,
			"next", strconv.FormatInt(next, 10), "keep", flag(keep))).Error(); err != nil {
		return wrapRedis("write schedule", err)
	}
	if err := p.client.Do(ctx, p.client.B().Hset().Key(p.keys.schedules()).FieldValue().FieldValue(name, w.Spec.Job.Topic).Build()).Error(); err != nil {
		return wrapRedis("write schedule", err)
	}
	return p.sweepSchedule(ctx, name, to)
}

// scheduleLockTTL is how long a broker that died while writing a schedule
// holds its name; scheduleLockWait how long a write waits for another's.
const (
	scheduleLockTTL  = 5 * time.Second
	scheduleLockWait = 10 * time.Second
)

var unlockScript = rueidis.NewLuaScript(lua.Source("unlock"))

// lockSchedule claims schedule name for one write, waiting while another
// broker's write holds it (at most scheduleLockWait: then ErrBusy, a 503
// to retry), and returns its release.
func (p *Pool) lockSchedule(ctx context.Context, name string) (unlock func(), err error) {
	key := p.keys.scheduleLock(name)
	token := p.opts.Origin + ":" + strconv.FormatUint(rand.Uint64(), 36)
	deadline := time.Now().Add(scheduleLockWait)
	for {
		err := p.client.Do(ctx, p.client.B().Set().Key(key).Value(token).Nx().Px(scheduleLockTTL).Build()).Error()
		if err == nil {
			return func() {
				// A fresh context: the write's may be done; a failed release
				// only makes the next writer wait out the TTL.
				rctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				_ = unlockScript.Exec(rctx, p.client, []string{key}, lua.Args("unlock", "token", token)).Error()
			}, nil
		}
		if !rueidis.IsRedisNil(err) {
			return nil, wrapRedis("write schedule", err)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("schedule %q: %w: another broker is writing it", name, job.ErrBusy)
		}
		select {
		case <-ctx.Done():
			return nil, wrapRedis("write schedule", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// sweepSchedule removes schedule name from every bucket but keep (-1: from
// every one): an old bucket it moved from, and any orphan an older write
// left. Under the name's lock, so no write is under way. The buckets' calls
// go at once (rueidis pipelines them): one round trip, not one a bucket.
func (p *Pool) sweepSchedule(ctx context.Context, name string, keep int) error {
	errs := make([]error, p.opts.Buckets)
	var wg sync.WaitGroup
	for b := range p.opts.Buckets {
		if b == keep {
			continue
		}
		wg.Go(func() {
			errs[b] = scheduleScript.Exec(ctx, p.client, append(p.keys.withTopics(b), p.keys.scheduleIn(b, name)),
				scheduleScript.args(p.caller(), "delete", "name", name)).Error()
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil { // the first: wrapRedis reads what Redis said from it
			return wrapRedis("write schedule: remove it from the other buckets", err)
		}
	}
	return nil
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return ""
}

// DeleteSchedule removes schedule name, from every bucket (an orphan a
// write cut short left too); ErrNotFound when the index names none.
func (p *Pool) DeleteSchedule(ctx context.Context, name string) error {
	unlock, err := p.lockSchedule(ctx, name)
	if err != nil {
		return err
	}
	defer unlock()
	topic, err := p.scheduleTopic(ctx, name)
	if err != nil {
		return err
	}
	if err := p.client.Do(ctx, p.client.B().Hdel().Key(p.keys.schedules()).Field(name).Build()).Error(); err != nil {
		return wrapRedis("delete schedule", err)
	}
	if err := p.sweepSchedule(ctx, name, -1); err != nil {
		return err
	}
	if topic == "" {
		return fmt.Errorf("schedule %q: %w", name, job.ErrNotFound)
	}
	return nil
}

// dropOrphan handles a due entry of schedule name in bucket b that the
// index does not name (deleted, or moved to another bucket), in one script
// (schedule.lua 'orphan'): a hash written less than a lock's lifetime ago
// may be a write's under way, its new bucket not yet named, so its due
// entry is put off a moment; an older one is an orphan, and goes. (A check
// of the lock, then a delete, let a write that took the lock in between
// lose its new hash.)
func (p *Pool) dropOrphan(ctx context.Context, b int, name string) error {
	return wrapRedis("fire schedule: drop an orphan", scheduleScript.Exec(ctx, p.client,
		append(p.keys.withTopics(b), p.keys.scheduleIn(b, name)), scheduleScript.args(p.caller(), "orphan", "name", name,
			"fresh", strconv.FormatInt(scheduleLockTTL.Milliseconds(), 10), "put_off", strconv.FormatInt(orphanPutOff.Milliseconds(), 10))).Error())
}

// orphanPutOff is how long a due entry met during a write of its schedule waits.
const orphanPutOff = 200 * time.Millisecond

// scheduleKeys are the bucket's keys, then the schedule's hash.
func (p *Pool) scheduleKeys(topic, name string) []string {
	return append(p.keys.withTopics(p.keys.bucketOf(topic)), p.keys.schedule(topic, name))
}

// scheduleTopic is the topic schedule name pushes to ("": no such schedule).
func (p *Pool) scheduleTopic(ctx context.Context, name string) (string, error) {
	topic, err := p.client.Do(ctx, p.client.B().Hget().Key(p.keys.schedules()).Field(name).Build()).ToString()
	if rueidis.IsRedisNil(err) {
		return "", nil
	}
	return topic, wrapRedis("schedule", err)
}

// Schedule reads schedule name; ErrNotFound when there is none.
func (p *Pool) Schedule(ctx context.Context, name string) (job.Schedule, error) {
	topic, err := p.scheduleTopic(ctx, name)
	if err != nil {
		return job.Schedule{}, err
	}
	if topic != "" {
		fields, err := p.client.Do(ctx, p.client.B().Hgetall().Key(p.keys.schedule(topic, name)).Build()).AsStrMap()
		if err != nil {
			return job.Schedule{}, wrapRedis("schedule", err)
		}
		if len(fields) > 0 {
			return readSchedule(name, fields)
		}
	}
	return job.Schedule{}, fmt.Errorf("schedule %q: %w", name, job.ErrNotFound)
}

// ScheduleCount is how many schedules the index names.
func (p *Pool) ScheduleCount(ctx context.Context) (int64, error) {
	n, err := p.client.Do(ctx, p.client.B().Hlen().Key(p.keys.schedules()).Build()).AsInt64()
	return n, wrapRedis("schedules", err)
}

// Schedules lists every schedule, with what its fires did.
func (p *Pool) Schedules(ctx context.Context) ([]job.Schedule, error) {
	names, err := p.client.Do(ctx, p.client.B().Hgetall().Key(p.keys.schedules()).Build()).AsStrMap()
	if err != nil {
		return nil, wrapRedis("schedules", err)
	}
	var order []string
	cmds := make(rueidis.Commands, 0, len(names))
	for name, topic := range names {
		order = append(order, name)
		cmds = append(cmds, p.client.B().Hgetall().Key(p.keys.schedule(topic, name)).Build())
	}
	out := make([]job.Schedule, 0, len(order))
	for i, r := range p.client.DoMulti(ctx, cmds...) {
		fields, err := r.AsStrMap()
		if err != nil {
			return nil, wrapRedis("schedules", err)
		}
		if len(fields) == 0 {
			continue // being written or deleted
		}
		s, err := readSchedule(order[i], fields)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// readSchedule decodes a schedule's hash.
func readSchedule(name string, f map[string]string) (job.Schedule, error) {
	s := job.Schedule{Name: name, File: f["file"], Run: f["run"]}
	if err := json.Unmarshal([]byte(f["spec"]), &s.Spec); err != nil {
		return s, fmt.Errorf("schedule %q: its spec: %w", name, err)
	}
	ms := func(k string) time.Time {
		if n, _ := strconv.ParseInt(f[k], 10, 64); n > 0 {
			return time.UnixMilli(n)
		}
		return time.Time{}
	}
	n := func(k string) int64 { v, _ := strconv.ParseInt(f[k], 10, 64); return v }
	s.Next, s.Last = ms("next"), ms("last")
	if id, err := parseMember(f["last_id"]); err == nil {
		s.LastID = id
	}
	s.Fires, s.Skips, s.Refused = n("fires"), n("skips"), n("refused")
	s.Late = time.Duration(n("late_ms")) * time.Millisecond
	return s, nil
}

// FireNow fires schedule name at once, outside its cron (an operator's
// "fire now"): its job is pushed and counted as its last fire, and its next
// fire stays as it was. With overlap skip, a fire while its last job waits
// or is reserved is refused (ErrConflict, saying so).
func (p *Pool) FireNow(ctx context.Context, name string) (Pushed, error) {
	topic, err := p.scheduleTopic(ctx, name)
	if err != nil {
		return Pushed{}, err
	}
	if topic == "" {
		return Pushed{}, fmt.Errorf("schedule %q: %w", name, job.ErrNotFound)
	}
	for range 5 { // a timer's fire in between moves next: read again
		fields, err := p.client.Do(ctx, p.client.B().Hgetall().Key(p.keys.schedule(topic, name)).Build()).AsStrMap()
		if err != nil {
			return Pushed{}, wrapRedis("fire schedule", err)
		}
		if len(fields) == 0 {
			return Pushed{}, fmt.Errorf("schedule %q: %w", name, job.ErrNotFound)
		}
		s, err := readSchedule(name, fields)
		if err != nil {
			return Pushed{}, err
		}
		seqs, err := p.ids.next(ctx, p.client, 1)
		if err != nil {
			return Pushed{}, wrapRedis("fire schedule: allocate id", err)
		}
		fire := scheduleFire{key: p.keys.schedule(topic, name), due: fields["next"], next: fields["next"], name: name, overlap: s.Spec.Overlap}
		got, err := p.push(ctx, s.Spec.Job, seqs[0], fire)
		switch {
		case errors.Is(err, errFiredElsewhere):
			continue
		case errors.Is(err, errSkipped):
			return Pushed{}, fmt.Errorf("schedule %q: %w: overlap skip, and its last job still waits or is reserved", name, job.ErrConflict)
		}
		return got, err
	}
	return Pushed{}, fmt.Errorf("fire schedule %q: %w: it kept firing meanwhile", name, job.ErrBusy)
}

// fireSchedule fires schedule name of bucket b if it is due: one push
// whose script first checks that the schedule's next fire is still the one
// read here (another broker may have fired it) and moves it to the next
// fire after now, by Redis's clock (a fire missed while no broker ran is
// made once, not once per tick missed). It reports the topic that got a
// ready job.
func (p *Pool) fireSchedule(ctx context.Context, b int, name string) (map[string]int, bool, error) {
	topic, err := p.scheduleTopic(ctx, name)
	if err != nil {
		return nil, false, err
	}
	member := scheduleDue + name
	if topic == "" || p.keys.bucketOf(topic) != b { // deleted or moved: an orphan, or a write under way
		return nil, false, p.dropOrphan(ctx, b, name)
	}
	res := p.client.DoMulti(ctx, p.client.B().Hgetall().Key(p.keys.schedule(topic, name)).Build(), p.client.B().Time().Build())
	fields, err := res[0].AsStrMap()
	if err != nil {
		return nil, false, wrapRedis("fire schedule", err)
	}
	if len(fields) == 0 { // deleted since the timer looked
		return nil, false, wrapRedis("fire schedule", p.client.Do(ctx, p.client.B().Zrem().Key(p.keys.due(b)).Member(member).Build()).Error())
	}
	clock, err := res[1].AsStrSlice()
	if err != nil || len(clock) != 2 {
		return nil, false, wrapRedis("fire schedule: time", err)
	}
	secs, _ := strconv.ParseInt(clock[0], 10, 64)
	usecs, _ := strconv.ParseInt(clock[1], 10, 64)
	now := time.Unix(secs, usecs*1000)
	s, err := readSchedule(name, fields)
	if err != nil {
		return nil, false, err
	}
	if s.Next.IsZero() || s.Spec.Paused {
		return nil, false, wrapRedis("fire schedule", p.client.Do(ctx, p.client.B().Zrem().Key(p.keys.due(b)).Member(member).Build()).Error())
	}
	if s.Next.After(now) { // not due yet (moved since the timer looked): the script sets its due entry right
		return nil, false, nil
	}
	when, err := job.ParseWhen(s.Spec.Cron, s.Spec.TZ)
	if err != nil {
		return nil, false, fmt.Errorf("schedule %q: %w", name, err)
	}
	next := when.Next(now)
	seqs, err := p.ids.next(ctx, p.client, 1)
	if err != nil {
		return nil, false, wrapRedis("fire schedule: allocate id", err)
	}
	fire := scheduleFire{key: p.keys.schedule(topic, name), due: fields["next"],
		next: strconv.FormatInt(epochMillis(next), 10), name: name, overlap: s.Spec.Overlap}
	got, err := p.push(ctx, s.Spec.Job, seqs[0], fire)
	switch {
	case errors.Is(err, errFiredElsewhere), errors.Is(err, errSkipped):
		return nil, false, nil
	case err != nil:
		// Refused for good (full, too big, a held key, a unique key on a
		// topic with fanout children, a child past max_fanout...): the
		// fire is made with no job. A refusal the script made after the
		// fire counted it already; one before (or in the pool) did not, and
		// left it due: move it on here, or every timer would try it again
		// at once, for ever.
		if errors.Is(err, job.ErrFull) || errors.Is(err, job.ErrTooBig) || errors.Is(err, job.ErrDuplicate) ||
			errors.Is(err, job.ErrConflict) || errors.Is(err, job.ErrInvalid) {
			return nil, false, wrapRedis("fire schedule", scheduleScript.Exec(ctx, p.client, p.scheduleKeys(topic, name),
				scheduleScript.args(p.caller(), "advance", "name", name, "due", fire.due, "next", fire.next)).Error())
		}
		return nil, false, fmt.Errorf("fire schedule %q: %w", name, err)
	}
	if got.Due.IsZero() && got.Kept {
		return map[string]int{topic: 1}, false, nil
	}
	return nil, false, nil
}
