package job

import (
	"testing"
	"time"
)

// A schedule's fires across Europe/Berlin's clock changes in 2026 (forward
// on 29 March at 02:00, back on 25 October at 03:00), from an injected
// instant, as When.Next documents them.
func TestScheduleAcrossDST(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, c := range []struct {
		name, cron string
		from       string
		want       []string
		tz         string
	}{
		{"daily in the skipped hour fires at the instant it would have been", "30 2 * * *", "2026-03-28T12:00:00+01:00",
			[]string{"2026-03-29T03:30:00+02:00", "2026-03-30T02:30:00+02:00"}, ""},
		{"daily in the repeated hour fires once, the first time", "30 2 * * *", "2026-10-24T12:00:00+02:00",
			[]string{"2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00"}, ""},
		{"every 30 minutes over the skipped hour", "0 */30 * * * *", "2026-03-29T01:00:00+01:00",
			[]string{"2026-03-29T01:30:00+01:00", "2026-03-29T03:00:00+02:00", "2026-03-29T03:30:00+02:00", "2026-03-29T04:00:00+02:00"}, ""},
		{"every 30 minutes over the repeated hour: its wall times once", "0 */30 * * * *", "2026-10-25T01:40:00+02:00",
			[]string{"2026-10-25T02:00:00+02:00", "2026-10-25T02:30:00+02:00", "2026-10-25T03:00:00+01:00"}, ""},
		{"09:00 every day keeps its wall time", "0 9 * * *", "2026-03-28T10:00:00+01:00",
			[]string{"2026-03-29T09:00:00+02:00", "2026-03-30T09:00:00+02:00"}, ""},
		{"seconds", "*/20 * * * * *", "2026-11-25T10:00:05Z",
			[]string{"2026-11-25T11:00:20+01:00", "2026-11-25T11:00:40+01:00", "2026-11-25T11:01:00+01:00"}, ""},
		{"every second from the second pass of the repeated hour goes on after it", "* * * * * *", "2026-10-25T02:10:00+01:00",
			[]string{"2026-10-25T03:00:00+01:00", "2026-10-25T03:00:01+01:00"}, ""},
		{"west of UTC too: the skipped hour's time fires as it would have been", "30 2 * * *", "2026-03-07T12:00:00-05:00",
			[]string{"2026-03-08T03:30:00-04:00", "2026-03-09T02:30:00-04:00"}, "America/New_York"},
	} {
		zone := "Europe/Berlin"
		if c.tz != "" {
			zone = c.tz
		}
		w, err := ParseWhen(c.cron, zone)
		if err != nil {
			t.Fatal(err)
		}
		next := at(c.from)
		for i, want := range c.want {
			next = w.Next(next)
			if !next.Equal(at(want)) {
				t.Fatalf("%s: fire %d at %s, want %s", c.name, i+1, next.In(berlin).Format(time.RFC3339), want)
			}
		}
	}
}

func TestParseWhenRefuses(t *testing.T) {
	for _, c := range []struct{ cron, tz string }{
		{"", ""}, {"* * *", ""}, {"61 * * * *", ""}, {"CRON_TZ=UTC * * * * *", ""}, {"* * * * *", "Mars/Olympus"}, {"* * * * *", "Local"},
	} {
		if _, err := ParseWhen(c.cron, c.tz); err == nil {
			t.Errorf("cron %q tz %q: taken", c.cron, c.tz)
		}
	}
}
