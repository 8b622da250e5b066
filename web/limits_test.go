package web_test

import (
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
	"github.com/gmq/gmq/job"
)

// A topic's rate, burst and max_reserved are set like its other settings,
// each checked, and its stats show the rate's tokens and the pops its limits
// held back.
func TestLimitSettingsOverHTTP(t *testing.T) {
	b := broker(t)
	api := b.URL + "/api/v1"
	for _, c := range []struct {
		body string
		code int
	}{
		{`{"rate": -1}`, 400},
		{`{"rate": "fast"}`, 400},
		{`{"rate": 2000000}`, 400},
		{`{"burst": 1.5}`, 400},
		{`{"max_reserved": -2}`, 400},
		{`{"rate": 2.5, "burst": 3, "max_reserved": 2}`, 200},
	} {
		mustCall(t, c.code, "PUT", api+"/topics/paced/config", c.body)
	}
	for range 4 {
		mustCall(t, 201, "POST", api+"/jobs", `{"topic":"paced","body":"x"}`)
	}
	mustCall(t, 200, "GET", api+"/pop?topic=paced", ``)
	mustCall(t, 200, "GET", api+"/pop?topic=paced", ``)
	mustCall(t, 204, "GET", api+"/pop?topic=paced", ``) // two reserved: max_reserved holds
	st := mustCall(t, 200, "GET", api+"/topics/paced", ``)
	settings, _ := st["settings"].(map[string]any)
	if settings["rate"] != 2.5 || settings["burst"] != 3.0 || settings["max_reserved"] != 2.0 {
		t.Errorf("settings %v", settings)
	}
	if st["tokens"] != 1.0 || st["total_limited"] != 1.0 || st["reserved"] != 2.0 || st["limited_seconds"] != 0.0 {
		t.Errorf("tokens %v, total_limited %v, limited_seconds %v, reserved %v", st["tokens"], st["total_limited"], st["limited_seconds"], st["reserved"])
	}
	mustCall(t, 201, "POST", api+"/jobs", `{"topic":"free","body":"x"}`)
	if st := mustCall(t, 200, "GET", api+"/topics/free", ``); st["tokens"] != nil || st["total_limited"] != 0.0 {
		t.Errorf("a topic without limits shows tokens %v, total_limited %v", st["tokens"], st["total_limited"])
	}
}

// A topic's config shows the conf.ini patterns that match it.
func TestTopicConfigShowsPatterns(t *testing.T) {
	b := brokertest.Fresh(t, func(c *config.Config) {
		c.Topics = map[string]job.TopicConfig{"crawl/*": {"max_reserved": "1"}}
	})
	got := mustCall(t, 200, "GET", b.URL+"/api/v1/topics/crawl%2Fsite/config", ``)
	patterns, _ := got["patterns"].(map[string]any)
	settings, _ := got["settings"].(map[string]any)
	if patterns["max_reserved"] != 1.0 || settings["max_reserved"] != 1.0 {
		t.Fatalf("crawl/site's config: %v", got)
	}
}

// A long poll held back by a rate for longer than request_timeout gets its
// job when the token comes, not a 503 (the long polls of 5 s or more that
// once answered 503 waited past it too).
func TestRateLimitedLongPollPastRequestTimeout(t *testing.T) {
	b := brokertest.Fresh(t, func(c *config.Config) { c.RequestTimeout = 500 * time.Millisecond })
	api := b.URL + "/api/v1"
	// A token every 4 s: the second pop must begin within 2.5 s of the
	// first for the held time counted to reach 1.5 s, margin for a loaded
	// machine.
	mustCall(t, 200, "PUT", api+"/topics/slow/config", `{"rate": 0.25}`)
	mustCall(t, 201, "POST", api+"/jobs", `{"topic":"slow","body":"1"}`)
	mustCall(t, 201, "POST", api+"/jobs", `{"topic":"slow","body":"2"}`)
	start := time.Now() // before the first pop: the next token comes at least 4 s after this
	mustCall(t, 200, "GET", api+"/pop?topic=slow", ``)
	j := mustCall(t, 200, "GET", api+"/pop?topic=slow&timeout=60", ``)
	// Job 2 (not the 60 s timeout's 204) says it came with the token; the
	// upper bound only says so too, generous for a loaded machine.
	if took := time.Since(start); j["body"] != "2" || took < 3500*time.Millisecond || took > 30*time.Second {
		t.Fatalf("got %v after %v, want job 2 about 4 s later", j["body"], took)
	}
	if st := mustCall(t, 200, "GET", api+"/topics/slow", ``); st["limited_seconds"].(float64) < 1.5 {
		t.Fatalf("the topic counts %v s held back, want about 4", st["limited_seconds"])
	}
}

// The same for the group limits: long polls held by group_rate (a token
// every 2 s) and by group_max_reserved (a slot freed by an ack 1.5 s in),
// each past request_timeout, get their job, not a 503.
func TestGroupLimitedLongPollsPastRequestTimeout(t *testing.T) {
	b := brokertest.Fresh(t, func(c *config.Config) { c.RequestTimeout = 500 * time.Millisecond })
	api := b.URL + "/api/v1"
	mustCall(t, 200, "PUT", api+"/topics/paced/config", `{"group_rate": 0.5}`)
	mustCall(t, 200, "PUT", api+"/topics/capped/config", `{"group_max_reserved": 1}`)
	for _, topic := range []string{"paced", "capped"} {
		mustCall(t, 201, "POST", api+"/jobs", `{"topic":"`+topic+`","body":"1","group":"g"}`)
		mustCall(t, 201, "POST", api+"/jobs", `{"topic":"`+topic+`","body":"2","group":"g"}`)
	}
	start := time.Now() // before the first pop: the group's next token comes at least 2 s after this
	mustCall(t, 200, "GET", api+"/pop?topic=paced", ``)
	if j := mustCall(t, 200, "GET", api+"/pop?topic=paced&timeout=60", ``); j["body"] != "2" || time.Since(start) < 1500*time.Millisecond {
		t.Fatalf("group_rate: %v after %v, want job 2 about 2 s later", j["body"], time.Since(start))
	}
	held := mustCall(t, 200, "GET", api+"/pop?topic=capped", ``)
	start = time.Now() // before the goroutine: the ack comes at least 1.5 s after this
	go func() {
		time.Sleep(1500 * time.Millisecond)
		brokertest.Do("POST", api+"/jobs/"+held["id"].(string)+"/ack", ``)
	}()
	// Job 2 (not the 60 s timeout's 204) says the ack woke it; the upper
	// bound only says so too, generous for a loaded machine.
	if j := mustCall(t, 200, "GET", api+"/pop?topic=capped&timeout=60", ``); j["body"] != "2" || time.Since(start) < time.Second || time.Since(start) > 30*time.Second {
		t.Fatalf("group_max_reserved: %v after %v, want job 2 once the ack frees the slot", j["body"], time.Since(start))
	}
}
