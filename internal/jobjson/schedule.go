package jobjson

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/gmq/gmq/job"
)

// ScheduleFields are what a schedule's definition names (PUT
// /api/v1/schedules/{name}, conf.ini's [schedule.NAME]).
var ScheduleFields = []string{"cron", "tz", "job", "overlap", "paused"}

// ScheduledJobFields are what a schedule's job may name: a pushed job's
// fields but its id (each fire pushes a new job), its expiry (a time
// from the schedule's definition would be past by the later fires) and its
// follow-ups (not yet kept in a schedule's definition).
var ScheduledJobFields = slices.DeleteFunc(slices.Clone(JobFields), func(f string) bool {
	return f == "id" || f == "expires_in" || f == "expires_at" || f == "then" || f == "on_dead" || f == "with_result" ||
		f == "after" || f == "on_dependency_failure" || f == "with_results" // a schedule's fires wait for no one
})

// MergeLayers lays changes over a layer of a schedule's fields: a field set
// to null is removed, the others replace the layer's.
func MergeLayers(layer, changes Fields) Fields {
	out := make(Fields, len(layer)+len(changes))
	for k, v := range layer {
		out[k] = v
	}
	for k, v := range changes {
		if string(v) == "null" {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	return out
}

// Schedule reads a schedule's effective definition: its layers (conf.ini's,
// then run-time changes), each field of a later one over the earlier.
func Schedule(def Defaults, layers ...Fields) (job.ScheduleSpec, error) {
	f := Fields{}
	for _, l := range layers {
		f = MergeLayers(f, l)
	}
	var s job.ScheduleSpec
	if err := f.Only("a schedule", ScheduleFields...); err != nil {
		return s, err
	}
	var err error
	var ok bool
	if s.Cron, ok, err = f.Str("cron"); err != nil {
		return s, err
	} else if !ok {
		return s, fmt.Errorf("%w: schedule: cron is missing", ErrBadRequest)
	}
	if s.TZ, _, err = f.Str("tz"); err != nil {
		return s, err
	}
	if s.Overlap, _, err = f.Str("overlap"); err != nil {
		return s, err
	}
	if raw, ok := f["paused"]; ok {
		if err := json.Unmarshal(raw, &s.Paused); err != nil {
			return s, fmt.Errorf("%w: paused: want true or false", ErrBadRequest)
		}
	}
	raw, ok := f["job"]
	if !ok {
		return s, fmt.Errorf("%w: schedule: job is missing", ErrBadRequest)
	}
	jf, err := Decode(raw)
	if err != nil {
		return s, fmt.Errorf("schedule's job: %w", err)
	}
	if err := jf.Only("a scheduled job", ScheduledJobFields...); err != nil {
		return s, fmt.Errorf("schedule's job: %w", err)
	}
	if s.Job, err = Job(jf, def); err != nil {
		return s, fmt.Errorf("schedule's job: %w", err)
	}
	return s, s.Check()
}
