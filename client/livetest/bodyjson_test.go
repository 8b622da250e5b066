package livetest_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/gmq/gmq/client"
)

// A body pushed as JSON pops back as JSON (BodyJSON, its compact text in
// Body); a string stays a string, even one whose text is JSON.
func TestGoClientJSONBody(t *testing.T) {
	b := broker(t)
	c := client.New(b.URL, nil)
	ctx := context.Background()
	type mail struct {
		To   string   `json:"to"`
		Tags []string `json:"tags"`
	}
	jobs := []struct {
		name   string
		push   client.Job
		body   string
		asJSON bool
	}{
		{"a struct", client.Job{Topic: "js", JSON: mail{To: "ada", Tags: []string{"new"}}}, `{"to":"ada","tags":["new"]}`, true},
		{"a slice", client.Job{Topic: "js", JSON: []any{1, "two"}}, `[1,"two"]`, true},
		{"raw JSON", client.Job{Topic: "js", JSON: json.RawMessage(`{ "a" : 1 }`)}, `{"a":1}`, true},
		{"a string holding JSON", client.Job{Topic: "js", Body: `{"to":"ada"}`}, `{"to":"ada"}`, false},
	}
	for _, j := range jobs {
		if _, err := c.Push(ctx, j.push); err != nil {
			t.Fatalf("%s: %v", j.name, err)
		}
	}
	for _, want := range jobs {
		got, err := c.Pop(ctx, []string{"js"}, time.Second)
		if err != nil || got == nil || got.Body != want.body || got.BodyJSON != want.asJSON {
			t.Fatalf("%s: popped %+v %v, want body %s, JSON %v", want.name, got, err, want.body, want.asJSON)
		}
		if want.name == "a struct" {
			var m mail
			if err := json.Unmarshal([]byte(got.Body), &m); err != nil || m.To != "ada" {
				t.Fatalf("decoding the popped body: %+v %v", m, err)
			}
			// Pushed again as popped, it is JSON again.
			if _, err := c.Push(ctx, client.Job{Topic: "again", Body: got.Body, BodyJSON: got.BodyJSON}); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Ack(ctx, got.ID, got.Attempt); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := c.Pop(ctx, []string{"again"}, time.Second); err != nil || !got.BodyJSON || got.Body != jobs[0].body {
		t.Fatalf("a popped job pushed again: %+v %v", got, err)
	}

	// Update and PopMany carry it too.
	if _, err := c.Push(ctx, client.Job{ID: "draft", Topic: "up", Body: "x", Delay: 3600}); err != nil {
		t.Fatal(err)
	}
	now := time.Duration(0)
	if j, err := c.Update(ctx, "draft", client.Update{Delay: &now, JSON: map[string]int{"v": 2}}); err != nil || !j.BodyJSON || j.Body != `{"v":2}` {
		t.Fatalf("update: %+v %v", j, err)
	}
	if got, err := c.PopMany(ctx, []string{"up"}, 5, time.Second); err != nil || len(got) != 1 || !got[0].BodyJSON {
		t.Fatalf("pop many: %+v %v", got, err)
	}
}
