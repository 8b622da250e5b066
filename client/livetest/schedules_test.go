package livetest_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gmq/gmq/client"
)

// Cron schedules through the Go client: a schedule every second pushes its
// job, Schedule and Schedules show its fires; paused it has no next fire
// and pushes nothing, but FireSchedule still pushes at once; under overlap
// skip a second fire while the first job waits is a 409; Reset takes a
// field back; DeleteSchedule removes it, and then every call is a 404.
func TestGoClientSchedules(t *testing.T) {
	b := broker(t)
	c := client.New(b.URL, nil)
	ctx := context.Background()

	s, err := c.SetSchedule(ctx, "tick", client.ScheduleChange{Cron: "* * * * * *",
		Job: &client.Job{Topic: "ticks", Body: "tick", TTR: 30, Priority: client.Priority(7), Group: "clock"}})
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "tick" || s.TZ != "UTC" || s.Overlap != client.OverlapAllow || s.Paused || s.Next.IsZero() ||
		s.Job.Topic != "ticks" || s.Job.TTR != 30 || *s.Job.Priority != 7 || s.Job.Group != "clock" || s.Run["cron"] != "* * * * * *" {
		t.Fatalf("the new schedule: %+v", s)
	}
	j, err := c.Pop(ctx, []string{"ticks"}, 3*time.Second)
	if err != nil || j == nil || j.Body != "tick" || j.TTR != 30 || j.Group != "clock" {
		t.Fatalf("its job: %+v %v", j, err)
	}
	if err := c.Ack(ctx, j.ID, j.Attempt); err != nil {
		t.Fatal(err)
	}
	eventually(t, 3*time.Second, "Schedule shows the fire", func() bool {
		s, err = c.Schedule(ctx, "tick")
		return err == nil && s.Fires >= 1 && s.LastID != "" && !s.Last.IsZero()
	})

	// Paused: no next fire, no job from the cron; a fire now still pushes.
	s, err = c.SetSchedule(ctx, "tick", client.ScheduleChange{Paused: new(true)})
	if err != nil || !s.Paused || !s.Next.IsZero() {
		t.Fatalf("paused: %+v %v", s, err)
	}
	drain(t, c, "ticks") // a fire may have come between the ack and the pause
	if j, err := c.Pop(ctx, []string{"ticks"}, 1500*time.Millisecond); err != nil || j != nil {
		t.Fatalf("a paused schedule pushed %+v %v", j, err)
	}
	fired, err := c.FireSchedule(ctx, "tick")
	if err != nil || fired.ID == "" || fired.InternalID == 0 {
		t.Fatalf("fire now: %+v %v", fired, err)
	}
	j, err = c.Pop(ctx, []string{"ticks"}, time.Second)
	if err != nil || j == nil || j.ID != fired.ID {
		t.Fatalf("the fired job: %+v %v, want %s", j, err, fired.ID)
	}
	if err := c.Ack(ctx, j.ID, j.Attempt); err != nil {
		t.Fatal(err)
	}
	if s, err := c.Schedule(ctx, "tick"); err != nil || s.LastID != fired.ID || !s.Next.IsZero() {
		t.Fatalf("after a fire now: %+v %v, want last_id %s and no next fire", s, err, fired.ID)
	}

	// Overlap skip: while the last fire's job waits (or is reserved), a
	// fire now is a 409.
	if _, err := c.SetSchedule(ctx, "tick", client.ScheduleChange{Overlap: client.OverlapSkip}); err != nil {
		t.Fatal(err)
	}
	first, err := c.FireSchedule(ctx, "tick")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.FireSchedule(ctx, "tick"); !client.IsConflict(err) || !strings.Contains(err.Error(), "overlap skip") {
		t.Fatalf("a second fire under overlap skip: %v, want a 409", err)
	}
	j, err = c.Pop(ctx, []string{"ticks"}, time.Second)
	if err != nil || j == nil || j.ID != first.ID {
		t.Fatalf("pop: %+v %v, want %s", j, err, first.ID)
	}
	if err := c.Ack(ctx, j.ID, j.Attempt); err != nil {
		t.Fatal(err)
	}
	if _, err := c.FireSchedule(ctx, "tick"); err != nil {
		t.Fatalf("a fire under overlap skip once the last job is done: %v", err)
	}

	// Reset takes a field out of the run-time layer: overlap back to allow.
	s, err = c.SetSchedule(ctx, "tick", client.ScheduleChange{Cron: "0 0 1 1 *", Reset: []string{"overlap"}})
	if err != nil || s.Overlap != client.OverlapAllow || s.Cron != "0 0 1 1 *" || s.Run["overlap"] != nil {
		t.Fatalf("reset overlap: %+v %v", s, err)
	}

	if _, err := c.SetSchedule(ctx, "other", client.ScheduleChange{Cron: "@daily", Job: &client.Job{Topic: "t", Body: "x"}}); err != nil {
		t.Fatal(err)
	}
	all, err := c.Schedules(ctx)
	if err != nil || len(all) != 2 || all[0].Name != "other" || all[1].Name != "tick" || all[1].Fires < 4 {
		t.Fatalf("Schedules: %+v %v", all, err)
	}

	if err := c.DeleteSchedule(ctx, "tick"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Schedule(ctx, "tick"); !client.IsNotFound(err) {
		t.Fatalf("Schedule of a deleted schedule: %v", err)
	}
	if err := c.DeleteSchedule(ctx, "tick"); !client.IsNotFound(err) {
		t.Fatalf("DeleteSchedule of a deleted schedule: %v", err)
	}
	if _, err := c.FireSchedule(ctx, "tick"); !client.IsNotFound(err) {
		t.Fatalf("FireSchedule of a deleted schedule: %v", err)
	}
}

// A bad definition is a 400 that says what is wrong.
func TestGoClientScheduleBadInput(t *testing.T) {
	b := broker(t)
	c := client.New(b.URL, nil)
	ctx := context.Background()
	job := &client.Job{Topic: "t", Body: "x"}
	for _, tc := range []struct {
		name   string
		change client.ScheduleChange
		says   string
	}{
		{"no cron", client.ScheduleChange{Job: job}, "cron is missing"},
		{"no job", client.ScheduleChange{Cron: "@daily"}, "job is missing"},
		{"a bad cron", client.ScheduleChange{Cron: "61 * * * *", Job: job}, "cron"},
		{"a bad zone", client.ScheduleChange{Cron: "@daily", TZ: "Mars/Olympus", Job: job}, "tz"},
		{"a bad overlap", client.ScheduleChange{Cron: "@daily", Job: job, Overlap: "never"}, "overlap"},
		{"a job with an id", client.ScheduleChange{Cron: "@daily", Job: &client.Job{ID: "a-1", Topic: "t", Body: "x"}}, `"id"`},
		{"a field gmq does not know", client.ScheduleChange{Cron: "@daily", Job: job, Reset: []string{"every"}}, `"every"`},
		{"nothing", client.ScheduleChange{}, "no field given"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.SetSchedule(ctx, "bad", tc.change)
			if status(err) != 400 || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("%v, want a 400 saying %s", err, tc.says)
			}
		})
	}
	if _, err := c.SetSchedule(ctx, "bad~name", client.ScheduleChange{Cron: "@daily", Job: job}); status(err) != 400 {
		t.Fatalf("a bad name: %v", err)
	}
	if _, err := c.Schedules(ctx); err != nil {
		t.Fatal(err)
	}
}

// ReleaseUnique frees a held key: the next push with it is a new job. A key
// not held is a 404.
func TestGoClientReleaseUnique(t *testing.T) {
	b := broker(t)
	c := client.New(b.URL, nil)
	ctx := context.Background()
	for _, key := range []string{"user-42", "a/b c%"} {
		unique := &client.Unique{Key: key, For: time.Hour}
		first, err := c.Push(ctx, client.Job{Topic: "mail", Body: "hi", Unique: unique})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Push(ctx, client.Job{Topic: "mail", Body: "hi", Unique: unique}); client.HeldBy(err) != first.ID {
			t.Fatalf("%q: held key: %v", key, err)
		}
		if err := c.ReleaseUnique(ctx, "mail", key); err != nil {
			t.Fatalf("%q: %v", key, err)
		}
		again, err := c.Push(ctx, client.Job{Topic: "mail", Body: "hi", Unique: unique})
		if err != nil || again.ID == first.ID {
			t.Fatalf("%q: a push after the release: %+v %v, want a new job", key, again, err)
		}
	}
	if err := c.ReleaseUnique(ctx, "mail", "nobody"); !client.IsNotFound(err) {
		t.Fatalf("a key not held: %v, want a 404", err)
	}
	if err := c.ReleaseUnique(ctx, "mail", strings.Repeat("k", 257)); status(err) != 400 {
		t.Fatalf("a key too long: %v, want a 400", err)
	}
}

// drain pops and acks every ready job of topic.
func drain(t *testing.T, c *client.Client, topic string) {
	t.Helper()
	for {
		j, err := c.Pop(context.Background(), []string{topic}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if j == nil {
			return
		}
		if err := c.Ack(context.Background(), j.ID, j.Attempt); err != nil {
			t.Fatal(err)
		}
	}
}
