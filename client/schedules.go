package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// Schedule is a cron schedule as gmq shows it: its definition (the layers
// File and Run merged), and what its fires did. Every broker's timers fire
// it, each fire once: a fire pushes Job.
type Schedule struct {
	Name string `json:"name"`
	Cron string `json:"cron"` // five fields, or six with seconds first; @daily, @every 1h30m
	TZ   string `json:"tz"`   // the IANA zone the fields are read in ("UTC" when none was set)
	// Job is what each fire pushes: gmq shows its Topic, Body, Priority,
	// TTR, Delay and Group (its retry policy and unique key, if it has
	// them, are in File or Run).
	Job     Job    `json:"job"`
	Overlap string `json:"overlap"` // OverlapAllow or OverlapSkip
	Paused  bool   `json:"paused"`
	// Next is its next fire; zero while it is paused.
	Next time.Time `json:"next,omitzero"`
	// Last is its last fire that pushed a job, and LastID that job's id;
	// zero and "" before any.
	Last   time.Time `json:"last,omitzero"`
	LastID string    `json:"last_id,omitempty"`
	// Fires counts the fires that pushed a job, Skips those that overlap
	// skip held back, Refused those whose push the topic refused (full, too
	// big, a unique key held): no job. A FireSchedule counts as a fire does.
	Fires   int64 `json:"fires"`
	Skips   int64 `json:"skips"`
	Refused int64 `json:"refused"`
	// LatenessSeconds sums how late its fires were, by Redis's clock.
	LatenessSeconds float64 `json:"lateness_seconds"`
	// File is conf.ini's [schedule.NAME], as fields; Run the run-time layer
	// over it, field by field (what SetSchedule sets). Each is empty when
	// the schedule has none.
	File map[string]any `json:"file"`
	Run  map[string]any `json:"run"`
}

// What a fire does while the last fire's job is still waiting or reserved
// (Schedule.Overlap, ScheduleChange.Overlap).
const (
	// OverlapAllow (the default) pushes at every fire.
	OverlapAllow = "allow"
	// OverlapSkip pushes nothing and counts a skip; FireSchedule is then a
	// 409.
	OverlapSkip = "skip"
)

// ScheduleChange is what SetSchedule lays over a schedule's run-time
// layer: each field set (a non-empty string, a non-nil pointer) replaces
// that field, the others stay. A new schedule needs Cron and Job.
type ScheduleChange struct {
	Cron string // "" leaves it
	TZ   string // an IANA zone, e.g. "Europe/Berlin"; "" leaves it
	// Job is what each fire pushes: a Job's fields but ID (each fire is a
	// new job); nil leaves it. It replaces the whole job, not field by field.
	Job     *Job
	Overlap string // OverlapAllow or OverlapSkip; "" leaves it
	Paused  *bool  // new(true) pauses, new(false) resumes; nil leaves it
	// Reset names fields to take out of the run-time layer ("cron", "tz",
	// "job", "overlap", "paused"): back to conf.ini's, or to the default
	// when conf.ini has none (cron and job have none: a 400). A field both
	// set and reset is an error, and nothing is sent.
	Reset []string
}

// MarshalJSON writes c as gmq's PUT reads it: the fields set, and null for
// each field reset.
func (c ScheduleChange) MarshalJSON() ([]byte, error) {
	out := map[string]any{}
	set := func(name string, v any, given bool) {
		if given {
			out[name] = v
		}
	}
	set("cron", c.Cron, c.Cron != "")
	set("tz", c.TZ, c.TZ != "")
	set("job", c.Job, c.Job != nil)
	set("overlap", c.Overlap, c.Overlap != "")
	set("paused", c.Paused, c.Paused != nil)
	for _, name := range c.Reset {
		if _, ok := out[name]; ok {
			return nil, fmt.Errorf("gmq: schedule change: %q is both set and reset", name)
		}
		out[name] = nil
	}
	return json.Marshal(out)
}

// Schedules returns every schedule, by name.
func (c *Client) Schedules(ctx context.Context) ([]Schedule, error) {
	var out struct {
		Schedules []Schedule `json:"schedules"`
	}
	if err := c.call(ctx, http.MethodGet, "/api/v1/schedules", nil, 0, &out); err != nil {
		return nil, err
	}
	return out.Schedules, nil
}

// Schedule returns schedule name; gmq's 404 (IsNotFound) when there is none.
func (c *Client) Schedule(ctx context.Context, name string) (*Schedule, error) {
	var s Schedule
	if err := c.call(ctx, http.MethodGet, schedulePath(name, ""), nil, 0, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// SetSchedule makes schedule name, or changes it: change's fields lie over
// its run-time layer (see ScheduleChange), and its next fire is counted
// from now. It returns the schedule as it now is. A bad definition (no cron
// or job for a new one, a cron, zone or overlap gmq cannot read, a job gmq
// would not take) is gmq's 400, whose Message says what is wrong.
func (c *Client) SetSchedule(ctx context.Context, name string, change ScheduleChange) (*Schedule, error) {
	var s Schedule
	if err := c.call(ctx, http.MethodPut, schedulePath(name, ""), change, 0, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// DeleteSchedule removes schedule name (a schedule of conf.ini's comes back
// at the broker's next reload); gmq's 404 when there is none. A retry after
// a 503 that finds none was answered by the earlier try: deleted.
func (c *Client) DeleteSchedule(ctx context.Context, name string) error {
	err := c.call(ctx, http.MethodDelete, schedulePath(name, ""), nil, 0, nil)
	if e := asError(err); e != nil && e.Retried && e.Status == http.StatusNotFound {
		return nil
	}
	return err
}

// FireSchedule pushes schedule name's job now, outside its cron, and says
// what it pushed: counted as its last fire, its next fire unchanged (a
// paused schedule fires too). gmq's 404 when there is none; a 409
// (IsConflict) when its overlap is skip and its last job still waits or is
// reserved, or when its job's unique key is held.
//
// A fire is not safe to repeat: a retry after a 503 may fire it a second
// time (under overlap skip it gets the 409 instead, with Error.Retried set).
func (c *Client) FireSchedule(ctx context.Context, name string) (Pushed, error) {
	var out Pushed
	err := c.call(ctx, http.MethodPost, schedulePath(name, "fire"), nil, 0, &out)
	return out, err
}

func schedulePath(name, action string) string {
	p := "/api/v1/schedules/" + url.PathEscape(name)
	if action != "" {
		p += "/" + action
	}
	return p
}
