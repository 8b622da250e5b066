package client

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

// A ScheduleChange sends the fields set, null for the fields reset, and
// paused false as false; a field both set and reset is refused unsent.
func TestScheduleChangeJSON(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change ScheduleChange
		want   string // "": an error
	}{
		{"a new schedule", ScheduleChange{Cron: "0 9 * * *", TZ: "Europe/Berlin", Overlap: OverlapSkip,
			Job: &Job{Topic: "reports", Body: "daily", TTR: 30, Group: "acme"}},
			`{"cron":"0 9 * * *","job":{"topic":"reports","body":"daily","TTR":30,"group":"acme"},"overlap":"skip","tz":"Europe/Berlin"}`},
		{"resumed", ScheduleChange{Paused: new(false)}, `{"paused":false}`},
		{"paused", ScheduleChange{Paused: new(true)}, `{"paused":true}`},
		{"reset", ScheduleChange{Cron: "@hourly", Reset: []string{"tz", "overlap"}}, `{"cron":"@hourly","overlap":null,"tz":null}`},
		{"set and reset", ScheduleChange{Cron: "@hourly", Reset: []string{"cron"}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := json.Marshal(tc.change)
			if tc.want == "" {
				if err == nil {
					t.Fatalf("sent %s, want an error", got)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("%s %v, want %s", got, err, tc.want)
			}
		})
	}
	c, f := serve(t, Options{}, answer{status: 200, body: `{}`})
	if _, err := c.SetSchedule(context.Background(), "s", ScheduleChange{Cron: "@daily", Reset: []string{"cron"}}); err == nil || len(f.got) != 0 {
		t.Fatalf("a change both setting and resetting cron: %v, %d requests", err, len(f.got))
	}
}

// Each call goes to its path with its method, names escaped, and reads
// gmq's answer.
func TestScheduleCalls(t *testing.T) {
	ctx := context.Background()
	sched := `{"name":"a b","cron":"* * * * * *","tz":"UTC","job":{"topic":"t","body":"x","priority":1024,"TTR":60,"delay":0},
		"overlap":"allow","paused":false,"next":"2026-01-02T03:04:05.5Z","last":"2026-01-02T03:04:04Z","last_id":"17",
		"fires":3,"skips":1,"refused":0,"lateness_seconds":0.25,"file":{},"run":{"cron":"* * * * * *"}}`
	c, f := serve(t, Options{},
		answer{status: 200, body: `{"schedules":[` + sched + `]}`},
		answer{status: 200, body: sched},
		answer{status: 200, body: sched},
		answer{status: 201, body: `{"id":"18","internal_id":18}`},
		answer{status: 200, body: `{"deleted":"a b"}`},
		answer{status: 200, body: `{"released":"k/1"}`},
	)
	all, err := c.Schedules(ctx)
	if err != nil || len(all) != 1 {
		t.Fatalf("%+v %v", all, err)
	}
	s := all[0]
	if s.Name != "a b" || s.Job.Topic != "t" || *s.Job.Priority != 1024 || s.Job.TTR != 60 || s.Fires != 3 || s.Skips != 1 ||
		s.LastID != "17" || s.LatenessSeconds != 0.25 || !s.Next.Equal(time.Date(2026, 1, 2, 3, 4, 5, 5e8, time.UTC)) ||
		s.Run["cron"] != "* * * * * *" || len(s.File) != 0 {
		t.Fatalf("read %+v", s)
	}
	if got, err := c.Schedule(ctx, "a b"); err != nil || got.Name != "a b" {
		t.Fatalf("%+v %v", got, err)
	}
	if _, err := c.SetSchedule(ctx, "a b", ScheduleChange{Paused: new(true)}); err != nil {
		t.Fatal(err)
	}
	if p, err := c.FireSchedule(ctx, "a b"); err != nil || p != (Pushed{ID: "18", InternalID: 18}) {
		t.Fatalf("%+v %v", p, err)
	}
	if err := c.DeleteSchedule(ctx, "a b"); err != nil {
		t.Fatal(err)
	}
	if err := c.ReleaseUnique(ctx, "t", "k/1"); err != nil {
		t.Fatal(err)
	}
	want := []request{
		{method: "GET", rawPath: "/api/v1/schedules"},
		{method: "GET", rawPath: "/api/v1/schedules/a%20b"},
		{method: "PUT", rawPath: "/api/v1/schedules/a%20b", body: `{"paused":true}`},
		{method: "POST", rawPath: "/api/v1/schedules/a%20b/fire"},
		{method: "DELETE", rawPath: "/api/v1/schedules/a%20b"},
		{method: "DELETE", rawPath: "/api/v1/topics/t/unique/k%2F1"},
	}
	for i, w := range want {
		if g := f.got[i]; g.method != w.method || g.rawPath != w.rawPath || g.body != w.body {
			t.Errorf("request %d: %s %s %q, want %s %s %q", i, g.method, g.rawPath, g.body, w.method, w.rawPath, w.body)
		}
	}
}

// A delete or release whose retry finds nothing was done by the earlier
// try; a first try's 404 is an error. A fire is not taken as done: its
// retry's 409 is returned, marked as a retry's.
func TestScheduleRetries(t *testing.T) {
	ctx := context.Background()
	notFound := answer{status: 404, body: `{"error":"not found"}`}
	for _, tc := range []struct {
		name    string
		answers []answer
		wantErr bool
	}{
		{"deleted by the earlier try", []answer{unavailable, notFound}, false},
		{"none to delete", []answer{notFound}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := serve(t, Options{}, tc.answers...)
			if err := c.DeleteSchedule(ctx, "s"); (err != nil) != tc.wantErr {
				t.Errorf("DeleteSchedule: %v, want error %v", err, tc.wantErr)
			}
			c, _ = serve(t, Options{}, tc.answers...)
			if err := c.ReleaseUnique(ctx, "t", "k"); (err != nil) != tc.wantErr || tc.wantErr && !IsNotFound(err) {
				t.Errorf("ReleaseUnique: %v, want error %v", err, tc.wantErr)
			}
		})
	}
	c, f := serve(t, Options{}, unavailable, answer{status: 409, body: `{"error":"overlap skip"}`})
	_, err := c.FireSchedule(ctx, "s")
	if !IsConflict(err) || !asError(err).Retried || len(f.got) != 2 {
		t.Fatalf("%v after %d tries, want a retry's 409", err, len(f.got))
	}
}
