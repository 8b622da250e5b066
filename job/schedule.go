package job

import (
	"fmt"
	"strings"
	"time"
	_ "time/tzdata" // time zones on a bare machine: a schedule's tz must not depend on the host's zoneinfo

	"github.com/robfig/cron/v3"
)

// Overlap modes of a schedule: whether a tick pushes while the last tick's
// job is still waiting or reserved.
const (
	OverlapAllow = "allow"
	OverlapSkip  = "skip"
)

// ScheduleSpec is a schedule's effective definition: when it fires (Cron,
// in TZ) and the job each fire pushes. It is stored with the schedule, as
// JSON, for whichever broker fires it (pool).
type ScheduleSpec struct {
	Cron    string `json:"cron"`
	TZ      string `json:"tz,omitempty"` // IANA name; "" is UTC
	Job     Spec   `json:"job"`
	Overlap string `json:"overlap,omitempty"` // OverlapAllow ("") or OverlapSkip
	Paused  bool   `json:"paused,omitempty"`
}

// Schedule is a schedule as listed: its definition and what it did.
type Schedule struct {
	Name   string
	Spec   ScheduleSpec
	Next   time.Time // zero: paused (or never again)
	Last   time.Time // its last fire; zero: none yet
	LastID uint64    // the job its last fire pushed (0: none)
	Fires  int64     // fires that pushed a job
	Skips  int64     // fires skipped by overlap skip
	// Refused counts fires whose push its topic refused (full, too big...).
	Refused int64
	Late    time.Duration // the sum of its fires' lateness (Redis's clock)
	// File and Run are its layers, as conf.ini's [schedule.NAME] and
	// run-time changes gave them (JSON objects; "" none).
	File, Run string
}

// cronParser reads five fields (minute first) or six (seconds first), and
// the descriptors (@daily, @every 1h30m).
var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// When is a parsed schedule: Next says its first fire after a time.
type When struct {
	schedule cron.Schedule
	loc      *time.Location
}

// ParseWhen reads a cron expression in time zone tz ("" is UTC).
func ParseWhen(expr, tz string) (When, error) {
	if strings.Contains(expr, "TZ=") {
		return When{}, fmt.Errorf("%w: cron %q: give the time zone as tz, not in the expression", ErrInvalid, expr)
	}
	s, err := cronParser.Parse(expr)
	if err != nil {
		return When{}, fmt.Errorf("%w: cron %q: %v", ErrInvalid, expr, err)
	}
	loc := time.UTC
	if tz == "Local" { // each broker's own zone: one schedule, different times
		return When{}, fmt.Errorf("%w: tz %q: name the zone (Europe/Berlin, UTC...)", ErrInvalid, tz)
	}
	if tz != "" {
		if loc, err = time.LoadLocation(tz); err != nil {
			return When{}, fmt.Errorf("%w: tz %q: %v", ErrInvalid, tz, err)
		}
	}
	return When{schedule: s, loc: loc}, nil
}

// Next is the first fire strictly after t (zero: none within five years,
// e.g. February 30th). The cron expression is read on the wall clock of
// the schedule's zone, and each wall time it names is one fire:
//   - a wall time that does not exist (the hour skipped when clocks go
//     forward) fires at the instant it would have been: 02:30 on the night
//     Europe/Berlin goes from 02:00 to 03:00 fires at 03:30, 01:30 UTC;
//   - a wall time that comes twice (the hour repeated when clocks go back)
//     fires once, at its first occurrence.
//
// robfig/cron alone skips the first and fires the second twice.
func (w When) Next(t time.Time) time.Time {
	t = t.In(w.loc)
	wall := wallUTC(t)
	// Each round moves on by at least a second of wall time; a time in the
	// second pass of a repeated hour may need a round for each second of it.
	for range 10000 {
		next := w.schedule.Next(wall)
		if next.IsZero() {
			return time.Time{}
		}
		at := firstInstant(next, w.loc)
		if at.After(t) {
			return at
		}
		wall = next
	}
	return time.Time{}
}

// wallUTC is t's wall clock read as a time in UTC, where no day skips or
// repeats an hour.
func wallUTC(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
}

// firstInstant is the first instant at which loc's wall clock reads wall
// (a time in UTC holding a wall clock); past a wall time that does not
// exist there, the instant it would have been.
func firstInstant(wall time.Time, loc *time.Location) time.Time {
	at := time.Date(wall.Year(), wall.Month(), wall.Day(), wall.Hour(), wall.Minute(), wall.Second(), wall.Nanosecond(), loc)
	if !wallUTC(at).Equal(wall) {
		// A wall time the clocks skipped: read it with the offset before the
		// change (Go picks either side, by zone), the instant it would have been.
		_, before := at.Add(-12 * time.Hour).Zone()
		return wall.Add(-time.Duration(before) * time.Second).In(loc)
	}
	for _, back := range []time.Duration{2 * time.Hour, time.Hour, 30 * time.Minute} { // Go may give the later of two
		if earlier := at.Add(-back); wallUTC(earlier).Equal(wall) {
			return earlier
		}
	}
	return at
}

// ValidateScheduleName checks a schedule's name: a client id's rules (it
// is named in URLs and conf.ini sections), but not "." or "..", which a
// URL's path cannot name (/schedules/../fire is /fire).
func ValidateScheduleName(name string) error {
	if name == "." || name == ".." {
		return fmt.Errorf("%w: schedule name %q: a path cannot name it; use another", ErrInvalid, name)
	}
	if err := ValidateClientID(name); err != nil {
		return fmt.Errorf("%w: schedule name %q: 1-200 bytes of A-Za-z0-9-+;.$_()@=: with at least one non-digit", ErrInvalid, name)
	}
	return nil
}

// Check validates s's own fields (its job is the dispatcher's to check).
func (s ScheduleSpec) Check() error {
	if s.Cron == "" {
		return fmt.Errorf("%w: schedule: cron is missing", ErrInvalid)
	}
	if _, err := ParseWhen(s.Cron, s.TZ); err != nil {
		return err
	}
	if s.Overlap != "" && s.Overlap != OverlapAllow && s.Overlap != OverlapSkip {
		return fmt.Errorf("%w: schedule overlap %q: want allow or skip", ErrInvalid, s.Overlap)
	}
	if s.Job.Topic == "" {
		return fmt.Errorf("%w: schedule: job.topic is missing", ErrInvalid)
	}
	if s.Job.ClientID != "" {
		return fmt.Errorf("%w: schedule: a scheduled job cannot carry an id (each fire pushes a new job)", ErrInvalid)
	}
	return nil
}
