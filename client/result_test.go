package client

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"
)

var acked = answer{status: 200, body: `{"acked":"j1"}`}

// What an ack sends as its result: the value's JSON, none for nil or a
// value that encodes as null, nothing at all for one encoding/json refuses.
func TestAckResult(t *testing.T) {
	var nowhere *struct{ URL string }
	for _, tc := range []struct {
		name   string
		result any
		want   string // the request's "result", "" for none
		noSend bool
	}{
		{"an object", map[string]any{"url": "/r/1.pdf", "pages": 7}, `{"pages":7,"url":"/r/1.pdf"}`, false},
		{"a number", 42, `42`, false},
		{"a string", "done", `"done"`, false},
		{"JSON text as it is", json.RawMessage(`[1, 2]`), `[1,2]`, false},
		{"nil: none", nil, "", false},
		{"a nil pointer: null, none", nowhere, "", false},
		{"not JSON: an error, nothing sent", make(chan int), "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, f := serve(t, Options{}, acked)
			err := c.AckResult(context.Background(), "j1", 1, tc.result)
			if tc.noSend {
				if err == nil || len(f.got) != 0 {
					t.Fatalf("error %v after %d requests, want an error before any", err, len(f.got))
				}
				return
			}
			if err != nil || len(f.got) != 1 {
				t.Fatalf("%v after %d requests", err, len(f.got))
			}
			if got := sentResult(t, f.got[0]); got != tc.want {
				t.Errorf("sent result %s, want %s", got, tc.want)
			}
		})
	}
}

// AckJob, AckJobAndPop and AckMany send a job's Result; AckJobResult's
// result stands for it.
func TestAckJobSendsItsResult(t *testing.T) {
	ctx := context.Background()
	j := &Job{ID: "j1", Attempt: 2, Token: "j1.2.x", Result: json.RawMessage(`{"ok":true}`)}
	c, f := serve(t, Options{}, acked, answer{status: 204}, answer{status: 200, body: `{"acked":["j1"],"failed":[]}`}, acked)
	if err := c.AckJob(ctx, j); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AckJobAndPop(ctx, j, []string{"t"}, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AckMany(ctx, []Job{*j}, nil, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := c.AckJobResult(ctx, j, 3); err != nil {
		t.Fatal(err)
	}
	var many struct {
		Jobs []struct {
			Result json.RawMessage `json:"result"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal([]byte(f.got[2].body), &many); err != nil || len(many.Jobs) != 1 {
		t.Fatalf("AckMany sent %s (%v)", f.got[2].body, err)
	}
	got := []string{sentResult(t, f.got[0]), sentResult(t, f.got[1]), string(many.Jobs[0].Result), sentResult(t, f.got[3])}
	want := []string{`{"ok":true}`, `{"ok":true}`, `{"ok":true}`, `3`}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("results sent %v, want %v", got, want)
	}
}

// WorkResults acks with the handler's result; a result gmq refuses as too
// big (413) is dropped and the ack sent again without it, and a result
// encoding/json refuses is dropped before any ack: the job is acked once
// either way, never failed.
func TestWorkResultsDropsAResultItCannotKeep(t *testing.T) {
	popped := answer{status: 200, body: `{"id":"j1","topic":"t","attempt":1,"token":"j1.1.x"}`}
	none := answer{status: 204}
	tooBig := answer{status: 413, body: `{"error":"the result is over the topic's max_result"}`}
	for _, tc := range []struct {
		name    string
		result  any
		answers []answer
		want    []string // the results the acks sent, "" for none
	}{
		{"kept", map[string]int{"pages": 7}, []answer{popped, none}, []string{`{"pages":7}`}},
		{"too big", "big", []answer{popped, tooBig, none}, []string{`"big"`, ""}},
		{"not JSON", func() {}, []answer{popped, none}, []string{""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, f := serve(t, Options{}, tc.answers...)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() {
				done <- c.WorkResults(ctx, []string{"t"}, func(context.Context, *Job) (any, error) { return tc.result, nil },
					WorkOptions{Wait: 10 * time.Millisecond, Log: slog.New(slog.NewTextHandler(testLog{t}, nil))})
			}()
			var acks []request
			for deadline := time.Now().Add(5 * time.Second); len(acks) < len(tc.want); time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%d acks within 5 s, want %d", len(acks), len(tc.want))
				}
				acks = requestsTo(f, "/api/v1/jobs/j1/ack")
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			acks = requestsTo(f, "/api/v1/jobs/j1/ack")
			var got []string
			for _, r := range acks {
				got = append(got, sentResult(t, r))
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("the acks sent results %q, want %q", got, tc.want)
			}
			if fails := requestsTo(f, "/api/v1/jobs/j1/fail"); len(fails) != 0 {
				t.Errorf("the job was failed: %v", fails)
			}
		})
	}
}

// sentResult is the "result" a request sent, as its text ("" for none).
func sentResult(t *testing.T, r request) string {
	t.Helper()
	var body map[string]json.RawMessage
	if err := json.Unmarshal([]byte(r.body), &body); err != nil {
		t.Fatalf("%s %s sent %q: %v", r.method, r.path, r.body, err)
	}
	return string(body["result"])
}

// requestsTo are the requests f was sent to path, so far.
func requestsTo(f *fake, path string) []request {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []request
	for _, r := range f.got {
		if r.path == path {
			out = append(out, r)
		}
	}
	return out
}

// testLog routes a worker's log to the test's.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
