package client

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// A job's body goes out as a JSON string (Body), or as JSON (JSON, or Body
// with BodyJSON set), its other fields as before.
func TestJobBodySent(t *testing.T) {
	for _, tc := range []struct {
		name string
		job  Job
		want string // "": an error
	}{
		{"a string", Job{Topic: "t", Body: "hi <b>", TTR: 30}, `{"topic":"t","body":"hi \u003cb\u003e","TTR":30}`},
		{"a string holding JSON", Job{Topic: "t", Body: `{"a":1}`}, `{"topic":"t","body":"{\"a\":1}"}`},
		{"a map", Job{Topic: "t", JSON: map[string]any{"to": "ada", "n": 2}}, `{"topic":"t","body":{"n":2,"to":"ada"}}`},
		{"a struct, over a Body", Job{ID: "j-1", Topic: "t", Body: "ignored", JSON: struct {
			To string `json:"to"`
		}{"ada"}}, `{"id":"j-1","topic":"t","body":{"to":"ada"}}`},
		{"a slice", Job{Topic: "t", JSON: []int{1, 2}}, `{"topic":"t","body":[1,2]}`},
		{"raw JSON", Job{Topic: "t", JSON: json.RawMessage(`{"a": [1]}`)}, `{"topic":"t","body":{"a":[1]}}`},
		{"a popped JSON body", Job{Topic: "t", Body: `{"a":1}`, BodyJSON: true}, `{"topic":"t","body":{"a":1}}`},
		{"BodyJSON over no JSON", Job{Topic: "t", Body: `{"a":`, BodyJSON: true}, ""},
		{"JSON that does not encode", Job{Topic: "t", JSON: func() {}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := json.Marshal(tc.job)
			switch {
			case tc.want == "" && err == nil:
				t.Fatalf("sent %s, want an error", got)
			case tc.want != "" && (err != nil || string(got) != tc.want):
				t.Fatalf("%s %v, want %s", got, err, tc.want)
			}
		})
	}
}

// A job gmq shows reads its body as a string, or as a JSON object or
// array's compact text with BodyJSON set; its other fields as before.
func TestJobBodyRead(t *testing.T) {
	for _, tc := range []struct {
		name, answer string
		body         string
		asJSON       bool
	}{
		{"a string", `{"id":"1","body":"hi","attempt":2}`, "hi", false},
		{"a string holding JSON", `{"id":"1","body":"[1, 2]","attempt":2}`, "[1, 2]", false},
		{"an object", `{"id":"1","body":{ "to" : "ada", "n" : [ 1 ] },"attempt":2}`, `{"to":"ada","n":[1]}`, true},
		{"an array", `{"id":"1","body":[],"attempt":2}`, `[]`, true},
		{"no body", `{"id":"1","attempt":2}`, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var j Job
			if err := json.Unmarshal([]byte(tc.answer), &j); err != nil {
				t.Fatal(err)
			}
			if j.Body != tc.body || j.BodyJSON != tc.asJSON || j.ID != "1" || j.Attempt != 2 || j.JSON != nil {
				t.Fatalf("read %+v, want body %q, JSON %v", j, tc.body, tc.asJSON)
			}
		})
	}
}

// Push, Pop and Update carry JSON bodies; a schedule's job shows one.
func TestJSONBodyCalls(t *testing.T) {
	ctx := context.Background()
	c, f := serve(t, Options{},
		answer{status: 201, body: `{"id":"1","internal_id":1}`},
		answer{status: 200, body: `{"id":"1","topic":"t","body":{"to":"ada"},"attempt":1}`},
		answer{status: 200, body: `{"id":"1","topic":"t","body":[1],"state":"ready"}`},
		answer{status: 200, body: `{"name":"s","job":{"topic":"t","body":{"kind":"daily"}}}`},
	)
	if _, err := c.Push(ctx, Job{Topic: "t", JSON: map[string]string{"to": "ada"}}); err != nil {
		t.Fatal(err)
	}
	j, err := c.Pop(ctx, []string{"t"}, 0)
	if err != nil || j.Body != `{"to":"ada"}` || !j.BodyJSON {
		t.Fatalf("pop: %+v %v", j, err)
	}
	if _, err := c.Update(ctx, "1", Update{JSON: []int{1}}); err != nil {
		t.Fatal(err)
	}
	s, err := c.Schedule(ctx, "s")
	if err != nil || s.Job.Body != `{"kind":"daily"}` || !s.Job.BodyJSON {
		t.Fatalf("a schedule's job: %+v %v", s.Job, err)
	}
	for i, want := range []string{`"body":{"to":"ada"}`, "", `"body":[1]`} {
		if !strings.Contains(f.got[i].body, want) {
			t.Errorf("request %d sent %s, want %s in it", i, f.got[i].body, want)
		}
	}
}
