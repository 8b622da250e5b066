package web_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
)

// topicHistory asks GET /api/v1/history for topics' own histories.
func topicHistory(t *testing.T, base string, topics ...string) (server []any, perTopic map[string]any) {
	t.Helper()
	q := url.Values{"topic": topics}
	h := mustCall(t, 200, "GET", base+"/api/v1/history?"+q.Encode(), ``)
	perTopic, _ = h["topics"].(map[string]any)
	if len(perTopic) != len(topics) {
		t.Fatalf("asked for %d topics, got %v", len(topics), h["topics"])
	}
	return h["samples"].([]any), perTopic
}

// The broker that writes the server's sample samples the first
// HistoryTopics topics of the listing too, each into a history of its own
// (GET /api/v1/history?topic=…); the topics after them have none.
func TestTopicHistoryOfTheFirstTopics(t *testing.T) {
	b := brokertest.Fresh(t, func(c *config.Config) { c.HistoryEvery = 50 * time.Millisecond; c.HistoryTopics = 3 })
	names := []string{"th-a", "th-b", "th-c", "th-d", "th-e"}
	for _, n := range names {
		mustCall(t, 201, "POST", b.URL+"/api/v1/jobs", `{"topic":"`+n+`","body":"x"}`)
	}
	mustCall(t, 200, "POST", b.URL+"/api/v1/pop", `{"topics":["th-b"]}`)
	var perTopic map[string]any
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) { // a minute: only a failure waits it out
		_, perTopic = topicHistory(t, b.URL, names...)
		if len(perTopic["th-c"].([]any)) >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a minute: %v", perTopic)
		}
	}
	for _, n := range names[3:] {
		if got := perTopic[n].([]any); len(got) != 0 {
			t.Errorf("%s, past the first 3 topics, has samples: %v", n, got)
		}
	}
	b1 := perTopic["th-b"].([]any)
	last := b1[len(b1)-1].(map[string]any)
	if last["pushed"] != 1.0 || last["reserved"] != 1.0 || last["deleted"] != 0.0 || last["failed"] != 0.0 ||
		last["t"].(float64) < b1[0].(map[string]any)["t"].(float64) {
		t.Errorf("th-b's samples: %v", b1)
	}

	many := make([]string, 101)
	for i := range many {
		many[i] = fmt.Sprintf("t%d", i)
	}
	code, out := call(t, "GET", b.URL+"/api/v1/history?"+url.Values{"topic": many}.Encode(), ``)
	if msg, _ := out["error"].(string); code != 400 || !strings.Contains(msg, "at most 100") {
		t.Errorf("101 topics: %d %v", code, out)
	}
	if code, out := call(t, "GET", b.URL+"/api/v1/history?topic=-bad", ``); code != 400 {
		t.Errorf("a bad topic name: %d %v", code, out)
	}
	if h := mustCall(t, 200, "GET", b.URL+"/api/v1/history", ``); h["topics"] != nil {
		t.Errorf("no topic asked for, yet: %v", h["topics"])
	}
}

// Two brokers share the Redis, each looking twice an interval: the
// topics' samples come only from the one that wrote the server's sample,
// so there are no more of them than of the server's.
func TestTopicHistoryOnlyWithTheServers(t *testing.T) {
	every := 100 * time.Millisecond
	tweak := func(c *config.Config) { c.HistoryEvery = every }
	b := brokertest.Fresh(t, tweak)
	brokertest.Start(t, brokertest.Redis(), tweak)
	mustCall(t, 201, "POST", b.URL+"/api/v1/jobs", `{"topic":"shared","body":"x"}`)
	time.Sleep(15 * every)
	// Five samples come within 15 intervals on an idle machine; a loaded
	// one samples late, so wait for them (a minute only for a failure).
	var server, mine []any
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(every) {
		var perTopic map[string]any
		server, perTopic = topicHistory(t, b.URL, "shared")
		if mine = perTopic["shared"].([]any); len(mine) >= 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d samples of the topic in a minute", len(mine))
		}
	}
	at := func(s any) float64 { return s.(map[string]any)["t"].(float64) }
	first, last := at(mine[0]), at(mine[len(mine)-1])
	written := 0 // the server's samples that could have led to the topic's
	for _, s := range server {
		if at(s) >= first-float64(every.Milliseconds()) && at(s) <= last {
			written++
		}
	}
	if len(mine) > written+1 {
		t.Fatalf("%d samples of the topic for %d of the server in the same time: written when not the server's", len(mine), written)
	}
}
