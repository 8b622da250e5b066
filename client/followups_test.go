package client

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// sentPush is the "push" a request sent, as its compact text ("" for none).
func sentPush(t *testing.T, r request) string {
	t.Helper()
	var body map[string]json.RawMessage
	if err := json.Unmarshal([]byte(r.body), &body); err != nil {
		t.Fatalf("%s %s sent %q: %v", r.method, r.path, r.body, err)
	}
	return string(body["push"])
}

// What AckPush sends and returns: the follow-ups as a push sends them, and
// their ids; none for an "again", nor for a retry that finds the job gone;
// a plain ack for no follow-ups.
func TestAckPush(t *testing.T) {
	push := []Job{{Topic: "emails", JSON: map[string]int{"order": 77}}, {Topic: "invoices", Body: "77", Delay: 60}}
	const wantPush = `[{"topic":"emails","body":{"order":77}},{"topic":"invoices","body":"77","delay":60}]`
	for _, tc := range []struct {
		name     string
		push     []Job
		answers  []answer
		want     []string
		wantSent string // the last request's "push"
	}{
		{"pushed", push, []answer{{status: 200, body: `{"acked":"j1","pushed":["11","12"]}`}}, []string{"11", "12"}, wantPush},
		{"again", push, []answer{{status: 200, body: `{"acked":"j1","pushed":[],"again":true}`}}, []string{}, wantPush},
		{"a retry finds it gone", push, []answer{unavailable, {status: 404, body: `{"error":"no such job"}`}}, nil, wantPush},
		{"no follow-ups: a plain ack", nil, []answer{acked}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, f := serve(t, Options{}, tc.answers...)
			ids, err := c.AckPush(context.Background(), "j1", 1, "done", tc.push)
			if err != nil {
				t.Fatal(err)
			}
			if (ids == nil) != (tc.want == nil) || strings.Join(ids, ",") != strings.Join(tc.want, ",") {
				t.Errorf("ids %#v, want %#v", ids, tc.want)
			}
			last := f.got[len(f.got)-1]
			if got := sentPush(t, last); got != tc.wantSent {
				t.Errorf("sent push %s, want %s", got, tc.wantSent)
			}
			if got := sentResult(t, last); got != `"done"` {
				t.Errorf("sent result %s", got)
			}
		})
	}
}

// A job's FollowUps go with AckJob and AckMany (whose answer's "pushed" is
// Acked.Pushed), and make AckJobAndPop ack, then pop, in two requests.
func TestAckJobSendsItsFollowUps(t *testing.T) {
	ctx := context.Background()
	j := &Job{ID: "j1", Attempt: 2, Token: "j1.2.x", FollowUps: []Job{{Topic: "later", Body: "x"}}}
	const wantPush = `[{"topic":"later","body":"x"}]`
	c, f := serve(t, Options{}, answer{status: 200, body: `{"acked":"j1","pushed":["5"]}`},
		answer{status: 200, body: `{"acked":"j1","pushed":["6"]}`}, answer{status: 204},
		answer{status: 200, body: `{"acked":["j1"],"failed":[],"pushed":{"j1":["7"]}}`})
	if err := c.AckJob(ctx, j); err != nil {
		t.Fatal(err)
	}
	if next, err := c.AckJobAndPop(ctx, j, []string{"t"}, 0); err != nil || next != nil {
		t.Fatalf("AckJobAndPop: %+v %v", next, err)
	}
	out, err := c.AckMany(ctx, []Job{*j}, nil, 0, 0)
	if err != nil || strings.Join(out.Pushed["j1"], ",") != "7" {
		t.Fatalf("AckMany: %+v %v", out, err)
	}
	paths := make([]string, len(f.got))
	for i, r := range f.got {
		paths[i] = r.path
	}
	if want := "/api/v1/jobs/j1/ack /api/v1/jobs/j1/ack /api/v1/pop /api/v1/ack"; strings.Join(paths, " ") != want {
		t.Fatalf("requests %v, want %s", paths, want)
	}
	for _, r := range f.got[:2] {
		if got := sentPush(t, r); got != wantPush || strings.Contains(r.body, `"next"`) {
			t.Errorf("%s sent %s", r.path, r.body)
		}
	}
	var many struct {
		Jobs []struct {
			Push json.RawMessage `json:"push"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal([]byte(f.got[3].body), &many); err != nil || len(many.Jobs) != 1 || string(many.Jobs[0].Push) != wantPush {
		t.Errorf("AckMany sent %s (%v)", f.got[3].body, err)
	}
}

// WorkResults acks a job whose handler returns a Done with its result and
// follow-ups, with no next pop in the ack; follow-ups gmq refuses (400)
// fail the job with gmq's reason.
func TestWorkResultsAcksWithFollowUps(t *testing.T) {
	popped := answer{status: 200, body: `{"id":"j1","topic":"t","attempt":1,"token":"j1.1.x"}`}
	none := answer{status: 204}
	for _, tc := range []struct {
		name     string
		result   any
		answers  []answer
		wantFail string // the fail's error, "" for none
	}{
		{"pushed", Done{Result: 7, Push: []Job{{Topic: "later", Body: "x"}}},
			[]answer{popped, {status: 200, body: `{"acked":"j1","pushed":["9"]}`}, none}, ""},
		{"a *Done", &Done{Result: 7, Push: []Job{{Topic: "later", Body: "x"}}},
			[]answer{popped, {status: 200, body: `{"acked":"j1","pushed":["9"]}`}, none}, ""},
		{"refused", Done{Result: 7, Push: []Job{{Topic: "later", Body: "x"}}},
			[]answer{popped, {status: 400, body: `{"error":"push: job 0: bad"}`}, {status: 200, body: `{"id":"j1","state":"delayed"}`}, none},
			"gmq: 400: push: job 0: bad"},
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
			settled := func() bool {
				return len(requestsTo(f, "/api/v1/jobs/j1/ack")) > 0 && (tc.wantFail == "" || len(requestsTo(f, "/api/v1/jobs/j1/fail")) > 0)
			}
			for deadline := time.Now().Add(30 * time.Second); !settled(); time.Sleep(10 * time.Millisecond) { // 30 s only for a machine that stalls
				if time.Now().After(deadline) {
					t.Fatal("the job was not settled within 30 s")
				}
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			acks := requestsTo(f, "/api/v1/jobs/j1/ack")
			if len(acks) != 1 || sentResult(t, acks[0]) != "7" || sentPush(t, acks[0]) != `[{"topic":"later","body":"x"}]` ||
				strings.Contains(acks[0].body, `"next"`) {
				t.Fatalf("the acks sent %v", acks)
			}
			fails := requestsTo(f, "/api/v1/jobs/j1/fail")
			var reasons []string
			for _, r := range fails {
				var body struct {
					Error string `json:"error"`
				}
				if err := json.Unmarshal([]byte(r.body), &body); err != nil {
					t.Fatal(err)
				}
				reasons = append(reasons, body.Error)
			}
			if tc.wantFail == "" && len(fails) != 0 || tc.wantFail != "" && (len(fails) != 1 || reasons[0] != tc.wantFail) {
				t.Errorf("the job was failed %q, want %q", reasons, tc.wantFail)
			}
		})
	}
}
