package dispatcher

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/gmq/gmq/internal/jobjson"
	"github.com/gmq/gmq/job"
	"github.com/gmq/gmq/pool"
)

// Schedules are cron schedules that push a job at each fire. They live in
// Redis and the bucket timers of every broker fire them, each fire once
// (pool/schedules.go); a schedule's definition has two layers, as topic
// settings do: conf.ini's [schedule.NAME] and run-time changes over it.
// One of the dispatcher's concerns, apart from its core (Dispatcher.Schedules).
type Schedules struct {
	d     *Dispatcher
	store ScheduleStore
}

// Schedules is the dispatcher's cron schedules.
func (d *Dispatcher) Schedules() Schedules { return Schedules{d, d.pool} }

// List lists every schedule.
func (s Schedules) List(ctx context.Context) ([]job.Schedule, error) {
	return s.store.Schedules(ctx)
}

// Get is one schedule; ErrNotFound when there is none.
func (s Schedules) Get(ctx context.Context, name string) (job.Schedule, error) {
	if err := job.ValidateScheduleName(name); err != nil {
		return job.Schedule{}, err
	}
	return s.store.Schedule(ctx, name)
}

// Set makes or changes schedule name at run time: changes (its
// fields: cron, tz, job, overlap, paused; null removes one) lie over its
// run-time layer, which lies over conf.ini's. Its next fire is counted
// from now.
func (s Schedules) Set(ctx context.Context, name string, changes jobjson.Fields) (job.Schedule, error) {
	if err := s.d.allow("schedule", writing); err != nil {
		return job.Schedule{}, err
	}
	if err := job.ValidateScheduleName(name); err != nil {
		return job.Schedule{}, err
	}
	return s.d.writeSchedule(ctx, name, func(cur job.Schedule, found bool) (file, run jobjson.Fields, err error) {
		if !found {
			if err := s.d.roomForSchedule(ctx); err != nil {
				return nil, nil, err
			}
		}
		if file, err = layer(cur.File); err != nil {
			return nil, nil, err
		}
		if run, err = layer(cur.Run); err != nil {
			return nil, nil, err
		}
		return file, jobjson.MergeLayers(run, changes), nil
	})
}

// roomForSchedule refuses a new schedule past MaxSchedules: each is read by
// every broker's timers and has series in /metrics, and anyone who may PUT
// picks their number. PUTs of new names racing at the cap may each get
// room (a count, then a write; the lock is a name's): the cap holds give
// or take those in flight (64 at once went 14 past it).
func (d *Dispatcher) roomForSchedule(ctx context.Context) error {
	if d.opts.MaxSchedules <= 0 {
		return nil
	}
	n, err := d.pool.ScheduleCount(ctx)
	if err != nil {
		return err
	}
	if n >= int64(d.opts.MaxSchedules) {
		return scheduleCapError{d.opts.MaxSchedules}
	}
	return nil
}

// scheduleCapError is a new schedule past [jobs] max_schedules: a full
// store, as a full topic is (HTTP 507).
type scheduleCapError struct{ max int }

func (e scheduleCapError) Error() string {
	return fmt.Sprintf("[jobs] max_schedules is %d, and there are that many: delete one first, or raise it", e.max)
}

func (e scheduleCapError) Is(target error) bool { return target == job.ErrFull }

// Apply writes conf.ini's schedules (their file layers) at start
// and at reload; a schedule conf.ini no longer names loses its file layer,
// and with no run-time layer either, it is deleted. They are written again
// after Redis loses gmq's data (checkStore).
func (s Schedules) Apply(ctx context.Context, file map[string]jobjson.Fields) error {
	if err := s.d.applySchedules(ctx, file); err != nil {
		return err
	}
	s.d.rememberSchedules(file)
	return nil
}

func (d *Dispatcher) applySchedules(ctx context.Context, file map[string]jobjson.Fields) error {
	if err := d.Schedules().Check(file); err != nil {
		return err
	}
	all, err := d.pool.Schedules(ctx)
	if err != nil {
		return fmt.Errorf("schedules: %w", err)
	}
	for _, s := range all {
		run, err := layer(s.Run)
		if err != nil {
			return err
		}
		if _, kept := file[s.Name]; !kept && s.File != "" {
			// Its conf.ini section is gone: what is left is its run-time
			// layer, if that is a whole schedule (a pause alone is not).
			if _, err := jobjson.Schedule(d.scheduleDefaults(), run); err != nil {
				d.log.Warn("schedule: conf.ini no longer has it, and its run-time changes are not a schedule alone: deleted", "schedule", s.Name)
				if err := d.pool.DeleteSchedule(ctx, s.Name); err != nil {
					return err
				}
				continue
			}
			if _, err := d.writeSchedule(ctx, s.Name, func(cur job.Schedule, _ bool) (jobjson.Fields, jobjson.Fields, error) {
				run, err := layer(cur.Run) // as it is now, under the lock
				return nil, run, err
			}); err != nil {
				return fmt.Errorf("schedule %q: %w", s.Name, err)
			}
		}
	}
	for name, f := range file {
		if _, err := d.writeSchedule(ctx, name, func(cur job.Schedule, _ bool) (jobjson.Fields, jobjson.Fields, error) {
			run, err := layer(cur.Run)
			return f, run, err
		}); err != nil {
			return fmt.Errorf("[schedule.%s]: %w", name, err)
		}
	}
	return nil
}

// Fire fires schedule name now, outside its cron, and returns its
// job's id: counted as its last fire, its next fire unchanged.
func (s Schedules) Fire(ctx context.Context, name string) (job.Pushed, error) {
	if err := s.d.allow("schedule", writing); err != nil {
		return job.Pushed{}, err
	}
	if err := job.ValidateScheduleName(name); err != nil {
		return job.Pushed{}, err
	}
	got, err := s.store.FireNow(ctx, name)
	if err != nil {
		return job.Pushed{}, err
	}
	if got.Due.IsZero() && got.Kept {
		if sc, err := s.d.Schedules().Get(ctx, name); err == nil {
			s.d.waiters.notify(sc.Spec.Job.Topic, 1)
		}
	}
	return job.Pushed{ID: got.ID, ClientID: got.ClientID, Unique: got.Unique}, nil
}

// Check says whether conf.ini's schedules are each a whole,
// valid schedule, before anything of a start or a reload is applied: a bad
// section must change nothing (conf.ini's layer alone: a run-time layer
// over it may only change fields).
func (s Schedules) Check(file map[string]jobjson.Fields) error {
	for name, f := range file {
		if _, err := s.d.scheduleSpec(f, nil); err != nil {
			return fmt.Errorf("[schedule.%s]: %w", name, err)
		}
	}
	return nil
}

// scheduleSpec is the definition a schedule's layers make, checked: a
// whole schedule whose job a push would take, to a topic (not an alias).
func (d *Dispatcher) scheduleSpec(file, run jobjson.Fields) (job.ScheduleSpec, error) {
	spec, err := jobjson.Schedule(d.scheduleDefaults(), file, run)
	if err != nil {
		return spec, err
	}
	if err := d.validate(spec.Job); err != nil {
		return spec, err
	}
	if dests, ok := d.alias(spec.Job.Topic); ok {
		return spec, fmt.Errorf("%w: schedule's job: %q is an alias of %d topics: give a schedule to each", job.ErrInvalid, spec.Job.Topic, len(dests))
	}
	return spec, nil
}

// Delete removes schedule name (conf.ini's comes back at the next
// reload).
func (s Schedules) Delete(ctx context.Context, name string) error {
	if err := s.d.allow("schedule", writing); err != nil {
		return err
	}
	if err := job.ValidateScheduleName(name); err != nil {
		return err
	}
	return s.store.DeleteSchedule(ctx, name)
}

// writeSchedule stores schedule name as the two layers that layers makes
// of it as it is make it: read, merged and written under the name's lock
// (pool.ChangeSchedule), its next fire counted from then (none while
// paused).
func (d *Dispatcher) writeSchedule(ctx context.Context, name string,
	layers func(cur job.Schedule, found bool) (file, run jobjson.Fields, err error)) (job.Schedule, error) {
	var w pool.ScheduleWrite
	err := d.pool.ChangeSchedule(ctx, name, func(cur job.Schedule, found bool) (pool.ScheduleWrite, error) {
		file, run, err := layers(cur, found)
		if err != nil {
			return w, err
		}
		spec, err := d.scheduleSpec(file, run)
		if err != nil {
			return w, err
		}
		when, err := job.ParseWhen(spec.Cron, spec.TZ)
		if err != nil {
			return w, err
		}
		w = pool.ScheduleWrite{Spec: spec, File: encodeLayer(file), Run: encodeLayer(run)}
		if !spec.Paused {
			w.Next = when.Next(time.Now())
		}
		// A rewrite that changes nothing of when it fires (a reload, a new
		// body, a move to another topic) keeps its next fire: recounted from
		// now, a fire due (after downtime) would be lost, and one racing the
		// rewrite could be made twice.
		w.Keep = found && cur.Spec.Cron == spec.Cron && cur.Spec.TZ == spec.TZ && !cur.Spec.Paused && !spec.Paused
		return w, nil
	})
	if err != nil {
		return job.Schedule{}, err
	}
	if sc, err := d.Schedules().Get(ctx, name); err == nil { // as stored, with what its fires did
		return sc, nil
	}
	return job.Schedule{Name: name, Spec: w.Spec, Next: w.Next, File: w.File, Run: w.Run}, nil
}

// scheduleDefaults fill a scheduled job's TTR and priority, as a push's.
func (d *Dispatcher) scheduleDefaults() jobjson.Defaults {
	return jobjson.Defaults{TTR: d.opts.DefaultTTR, Priority: d.opts.DefaultPriority}
}

// layer decodes a stored layer ("" is none).
func layer(text string) (jobjson.Fields, error) {
	if text == "" {
		return jobjson.Fields{}, nil
	}
	f, err := jobjson.DecodeStored([]byte(text))
	if err != nil {
		return nil, fmt.Errorf("a stored schedule layer: %w", err)
	}
	return f, nil
}

// encodeLayer is a layer as stored ("" when empty).
func encodeLayer(f jobjson.Fields) string {
	if len(f) == 0 {
		return ""
	}
	data, _ := json.Marshal(f) // raw messages and strings: cannot fail
	return string(data)
}

// ScheduleFromINI turns a [schedule.NAME] section's keys (config.ScheduleKeys)
// into a schedule's fields: the job's keys in its job.
func ScheduleFromINI(keys map[string]string) (jobjson.Fields, error) {
	f, j := jobjson.Fields{}, map[string]string{}
	for k, v := range keys {
		switch k {
		case "cron", "tz", "overlap":
			f[k], _ = json.Marshal(v)
		case "paused":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return nil, fmt.Errorf("paused = %s: want true or false", v)
			}
			f[k], _ = json.Marshal(b)
		default: // the job's: numbers are read from their text, as a push's strings are
			j[k] = v
		}
	}
	if len(j) > 0 {
		f["job"], _ = json.Marshal(j)
	}
	return f, nil
}
