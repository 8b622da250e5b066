package web_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
	"github.com/gmq/gmq/internal/jobjson"
)

// PUT /api/v1/schedules/{name} makes a schedule that the broker's bucket
// timers fire; GET lists it with its next and last fire and its last job;
// a pause stops it, DELETE removes it; bad definitions are 400s that say why.
func TestSchedulesOverHTTP(t *testing.T) {
	b := broker(t)
	api := b.URL + "/api/v1"
	sc := mustCall(t, 200, "PUT", api+"/schedules/every-second", `{"cron":"* * * * * *","job":{"topic":"ticks","body":"tick","ttr":30}}`)
	if sc["next"] == nil || sc["tz"] != "UTC" || sc["overlap"] != "allow" {
		t.Fatalf("the new schedule: %v", sc)
	}
	j := mustCall(t, 200, "GET", api+"/pop?topic=ticks&timeout=3", ``)
	if j["body"] != "tick" || j["TTR"] != 30.0 {
		t.Fatalf("its job: %v", j)
	}
	deadline := time.Now().Add(time.Minute) // a fire each second: a minute only for a failure
	for {
		got := mustCall(t, 200, "GET", api+"/schedules/every-second", ``)
		if got["fires"].(float64) >= 1 && got["last_id"] != nil && got["last"] != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a fire: %v", got)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if paused := mustCall(t, 200, "PUT", api+"/schedules/every-second", `{"paused":true}`); paused["next"] != nil || paused["paused"] != true {
		t.Fatalf("paused: %v", paused)
	}
	list := mustCall(t, 200, "GET", api+"/schedules", ``)
	if all, _ := list["schedules"].([]any); len(all) != 1 {
		t.Fatalf("list: %v", list)
	}
	mustCall(t, 200, "DELETE", api+"/schedules/every-second", ``)
	mustCall(t, 404, "GET", api+"/schedules/every-second", ``)
	mustCall(t, 404, "DELETE", api+"/schedules/every-second", ``)
	for _, c := range []struct{ body, says string }{
		{`{"job":{"topic":"t","body":"x"}}`, "cron is missing"},
		{`{"cron":"61 * * * *","job":{"topic":"t","body":"x"}}`, "cron"},
		{`{"cron":"* * * * *","tz":"Mars/Olympus","job":{"topic":"t","body":"x"}}`, "tz"},
		{`{"cron":"* * * * *"}`, "job is missing"},
		{`{"cron":"* * * * *","job":{"topic":"t","body":"x","id":"a-1"}}`, `unknown field "id"`},
		{`{"cron":"* * * * *","job":{"topic":"t","body":"x"},"overlap":"never"}`, "overlap"},
		{`{"cron":"* * * * *","job":{"topic":"t","body":"x"},"every":5}`, `unknown field "every"`},
		{`{}`, "no field given"},
	} {
		got := mustCall(t, 400, "PUT", api+"/schedules/bad", c.body)
		if msg, _ := got["error"].(string); !strings.Contains(msg, c.says) {
			t.Errorf("%s: %q, want it to say %q", c.body, msg, c.says)
		}
	}
	mustCall(t, 400, "PUT", api+"/schedules/bad~name", `{"cron":"* * * * *","job":{"topic":"t","body":"x"}}`)
	// "." and ".." cannot be named in a path: %2E%2E reaches the handler.
	for _, name := range []string{"%2E", "%2E%2E"} {
		if out := mustCall(t, 400, "PUT", api+"/schedules/"+name, `{"cron":"* * * * *","job":{"topic":"t","body":"x"}}`); !strings.Contains(out["error"].(string), "a path cannot name it") {
			t.Fatalf("PUT /schedules/%s: %v", name, out)
		}
	}
}

// conf.ini's [schedule.NAME] is a schedule's file layer: a run-time change
// lies over it, and null takes it back.
func TestScheduleFromConfIni(t *testing.T) {
	b := brokertest.Fresh(t, func(c *config.Config) {
		c.Schedules = map[string]map[string]string{"nightly": {"cron": "0 3 * * *", "tz": "Europe/Berlin", "topic": "reports", "body": "build", "priority": "5"}}
	})
	api := b.URL + "/api/v1"
	sc := mustCall(t, 200, "GET", api+"/schedules/nightly", ``)
	if sc["cron"] != "0 3 * * *" || sc["tz"] != "Europe/Berlin" || sc["job"].(map[string]any)["priority"] != 5.0 {
		t.Fatalf("from conf.ini: %v", sc)
	}
	if sc := mustCall(t, 200, "PUT", api+"/schedules/nightly", `{"cron":"0 4 * * *"}`); sc["cron"] != "0 4 * * *" || sc["job"].(map[string]any)["topic"] != "reports" {
		t.Fatalf("a run-time change over it: %v", sc)
	}
	if sc := mustCall(t, 200, "PUT", api+"/schedules/nightly", `{"cron":null}`); sc["cron"] != "0 3 * * *" {
		t.Fatalf("taken back: %v", sc)
	}
}

// POST /api/v1/schedules/{name}/fire pushes its job now: counted as its
// last fire; with overlap skip, refused (409) while that job waits.
func TestScheduleFireNow(t *testing.T) {
	b := broker(t)
	api := b.URL + "/api/v1"
	mustCall(t, 200, "PUT", api+"/schedules/manual", `{"cron":"0 0 1 1 *","job":{"topic":"manual","body":"now"},"overlap":"skip","paused":true}`)
	fired := mustCall(t, 201, "POST", api+"/schedules/manual/fire", ``)
	sc := mustCall(t, 200, "GET", api+"/schedules/manual", ``)
	if sc["fires"] != 1.0 || sc["last_id"] != fired["id"] || sc["next"] != nil || sc["lateness_seconds"] != 0.0 {
		t.Fatalf("after a fire now: %v (fired %v)", sc, fired)
	}
	if put := mustCall(t, 200, "PUT", api+"/schedules/manual", `{"tz":"Europe/Berlin"}`); put["fires"] != 1.0 || put["last_id"] != fired["id"] {
		t.Fatalf("a change answers the schedule as stored, its fires kept: %v", put)
	}
	mustCall(t, 409, "POST", api+"/schedules/manual/fire", ``)
	j := mustCall(t, 200, "GET", api+"/pop?topic=manual", ``)
	mustCall(t, 200, "POST", api+"/jobs/"+j["id"].(string)+"/ack", ``)
	mustCall(t, 201, "POST", api+"/schedules/manual/fire", ``)
	mustCall(t, 404, "POST", api+"/schedules/nothing/fire", ``)
}

// conf.ini's schedules, from attacks on them: a reload keeps a schedule's
// next fire when its cron is the same (a fire due after downtime is not
// lost); a section removed whose run-time layer is only a pause deletes
// the schedule instead of failing every reload; an alias is refused.
func TestScheduleReloads(t *testing.T) {
	b := broker(t)
	api := b.URL + "/api/v1"
	d := b.Broker.Dispatcher()
	section := map[string]jobjson.Fields{"cz": {"cron": []byte(`"0 3 * * *"`), "job": []byte(`{"topic":"r","body":"x"}`)}}
	if err := d.Schedules().Apply(t.Context(), section); err != nil {
		t.Fatal(err)
	}
	first := mustCall(t, 200, "GET", api+"/schedules/cz", ``)["next"]
	time.Sleep(10 * time.Millisecond)
	section["cz"]["job"] = []byte(`{"topic":"r","body":"y"}`)
	if err := d.Schedules().Apply(t.Context(), section); err != nil {
		t.Fatal(err)
	}
	if again := mustCall(t, 200, "GET", api+"/schedules/cz", ``); again["next"] != first || again["job"].(map[string]any)["body"] != "y" {
		t.Fatalf("a reload with the same cron: %v, next was %v", again, first)
	}
	mustCall(t, 200, "PUT", api+"/schedules/cz", `{"paused":true}`)
	if err := d.Schedules().Apply(t.Context(), nil); err != nil {
		t.Fatalf("the section removed, a pause left: %v", err)
	}
	mustCall(t, 404, "GET", api+"/schedules/cz", ``)
}

// A schedule's job may not go to an alias: its fires would not be split
// over the destinations.
func TestScheduleRefusesAnAlias(t *testing.T) {
	b := brokertest.Fresh(t, func(c *config.Config) { c.Aliases = map[string][]string{"everyone": {"ma", "sm"}} })
	got := mustCall(t, 400, "PUT", b.URL+"/api/v1/schedules/all", `{"cron":"* * * * *","job":{"topic":"everyone","body":"x"}}`)
	if msg, _ := got["error"].(string); !strings.Contains(msg, "alias") {
		t.Fatalf("%v", got)
	}
}

// Two changes of one schedule at once both hold: each is read, merged and
// written under the schedule's lock (an attack found 16 of 20 racing pairs
// where one undid the other: a pause lost while it kept firing).
func TestRacingScheduleChangesBothHold(t *testing.T) {
	b := broker(t)
	api := b.URL + "/api/v1"
	for i := range 20 {
		name := fmt.Sprintf("race-%d", i)
		mustCall(t, 200, "PUT", api+"/schedules/"+name, `{"cron":"0 3 * * *","job":{"topic":"r","body":"x"}}`)
		var wg sync.WaitGroup
		for _, change := range []string{`{"paused":true}`, `{"overlap":"skip"}`} {
			wg.Go(func() { mustCall(t, 200, "PUT", api+"/schedules/"+name, change) })
		}
		wg.Wait()
		if s := mustCall(t, 200, "GET", api+"/schedules/"+name, ``); s["paused"] != true || s["overlap"] != "skip" {
			t.Fatalf("%s after a pause and an overlap change at once: paused %v, overlap %v", name, s["paused"], s["overlap"])
		}
	}
}
