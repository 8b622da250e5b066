package web_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
)

// Every pop hands out its delivery's token, "<internal_id>.<attempt>": a
// single pop, a batch pop and the next job of an ack; a look at a job
// (GET) shows none.
func TestPopsCarryTokens(t *testing.T) {
	b := broker(t)
	api := b.URL + "/api/v1"
	for i := range 4 {
		mustCall(t, 201, "POST", api+"/jobs", fmt.Sprintf(`{"id":"tok-%d","topic":"tok","body":"x"}`, i))
	}
	hasToken := func(what string, job map[string]any) {
		t.Helper()
		want := fmt.Sprintf("%.0f.%.0f", job["internal_id"], job["attempt"])
		if job["token"] != want {
			t.Errorf("%s: token %v, want %q (%v)", what, job["token"], want, job)
		}
	}
	one := mustCall(t, 200, "GET", api+"/pop?topic=tok", ``)
	hasToken("pop", one)
	next := mustCall(t, 200, "POST", api+"/jobs/tok-0/ack", fmt.Sprintf(`{"token":%q,"next":{"topic":"tok"}}`, one["token"]))
	hasToken("ack's next", next)
	many := mustCall(t, 200, "POST", api+"/pop", `{"topic":"tok","count":5}`)
	jobs, _ := many["jobs"].([]any)
	if len(jobs) != 2 {
		t.Fatalf("batch pop: %v", many)
	}
	for _, j := range jobs {
		hasToken("batch pop", j.(map[string]any))
	}
	if got := mustCall(t, 200, "GET", api+"/jobs/tok-1", ``); got["token"] != nil {
		t.Errorf("GET shows a token: %v", got)
	}
}

// The rules of a call that names its delivery by token: it acts on the
// token's job at the token's attempt, whatever job the path's client id
// names now; the path and an attempt given must agree with it.
func TestTokenRules(t *testing.T) {
	b := broker(t)
	api := b.URL + "/api/v1"
	n := 0
	// popped pushes a job (id: a client id, or "" for a numbered job) and
	// pops it, in a topic of its own.
	popped := func(id string) map[string]any {
		t.Helper()
		n++
		topic := fmt.Sprintf("rules-%d", n)
		spec := fmt.Sprintf(`{"topic":%q,"body":"x","retry":{"max_attempts":3}}`, topic)
		if id != "" {
			spec = fmt.Sprintf(`{"id":%q,"topic":%q,"body":"x","retry":{"max_attempts":3}}`, id, topic)
		}
		mustCall(t, 201, "POST", api+"/jobs", spec)
		return mustCall(t, 200, "GET", api+"/pop?topic="+topic, ``)
	}
	number := func(j map[string]any) string { return fmt.Sprintf("%.0f", j["internal_id"]) }
	state := func(id string) string {
		t.Helper()
		code, got := call(t, "GET", api+"/jobs/"+url.PathEscape(id), ``)
		if code == 404 {
			return "gone"
		}
		return fmt.Sprint(got["state"])
	}
	tests := []struct {
		name string
		// run makes its jobs and returns the request (a path under /api/v1/jobs/ and a body)
		// and a check of what the request left.
		run  func() (path, body string, after func())
		code int
		says string // in the error
	}{
		{"ack by client id and token", func() (string, string, func()) {
			j := popped("r-a")
			return "r-a/ack", fmt.Sprintf(`{"token":%q}`, j["token"]), func() { want(t, state("r-a"), "gone") }
		}, 200, ""},
		{"ack by number and token", func() (string, string, func()) {
			j := popped("")
			return number(j) + "/ack", fmt.Sprintf(`{"token":%q}`, j["token"]), func() { want(t, state(number(j)), "gone") }
		}, 200, ""},
		{"token in the query", func() (string, string, func()) {
			j := popped("r-q")
			return "r-q/ack?token=" + url.QueryEscape(j["token"].(string)), ``, func() { want(t, state("r-q"), "gone") }
		}, 200, ""},
		{"token and the same attempt", func() (string, string, func()) {
			j := popped("r-s")
			return "r-s/ack", fmt.Sprintf(`{"token":%q,"attempt":1}`, j["token"]), func() { want(t, state("r-s"), "gone") }
		}, 200, ""},
		{"token and another attempt", func() (string, string, func()) {
			j := popped("r-t")
			return "r-t/ack", fmt.Sprintf(`{"token":%q,"attempt":2}`, j["token"]), func() { want(t, state("r-t"), "reserved") }
		}, 400, "attempt 2 is not the token's"},
		{"a number that is not the token's", func() (string, string, func()) {
			j, k := popped(""), popped("")
			return number(k) + "/ack", fmt.Sprintf(`{"token":%q}`, j["token"]), func() {
				want(t, state(number(j)), "reserved")
				want(t, state(number(k)), "reserved")
			}
		}, 400, "is not the token's job"},
		{"a client id whose job is not the token's", func() (string, string, func()) {
			j := popped("r-u")
			popped("r-v")
			return "r-v/ack", fmt.Sprintf(`{"token":%q}`, j["token"]), func() {
				want(t, state("r-u"), "reserved")
				want(t, state("r-v"), "reserved")
			}
		}, 409, "another job (job r-u)"},
		{"a gone job's token, its client id pushed again", func() (string, string, func()) {
			j := popped("r-w")
			mustCall(t, 200, "DELETE", api+"/jobs/r-w", ``)
			popped("r-w") // a new job, at attempt 1
			return "r-w/ack", fmt.Sprintf(`{"token":%q,"attempt":1}`, j["token"]), func() { want(t, state("r-w"), "reserved") }
		}, 404, `ack "r-w": not found`},
		{"a stale token", func() (string, string, func()) {
			j := popped("r-x")
			mustCall(t, 200, "POST", api+"/jobs/r-x/release", `{}`)
			mustCall(t, 200, "GET", api+"/pop?topic="+fmt.Sprintf("rules-%d", n), ``) // attempt 2
			return "r-x/ack", fmt.Sprintf(`{"token":%q}`, j["token"]), func() { want(t, state("r-x"), "reserved") }
		}, 409, "stale delivery: attempt 1, the job is on attempt 2"},
		{"touch", func() (string, string, func()) {
			j := popped("r-y")
			return "r-y/touch", fmt.Sprintf(`{"token":%q}`, j["token"]), func() { want(t, state("r-y"), "reserved") }
		}, 200, ""},
		{"release", func() (string, string, func()) {
			j := popped("r-z")
			return "r-z/release", fmt.Sprintf(`{"token":%q,"delay":60}`, j["token"]), func() { want(t, state("r-z"), "delayed") }
		}, 200, ""},
		{"bury", func() (string, string, func()) {
			j := popped("r-b")
			return "r-b/bury", fmt.Sprintf(`{"token":%q}`, j["token"]), func() { want(t, state("r-b"), "buried") }
		}, 200, ""},
		{"fail", func() (string, string, func()) {
			j := popped("r-f")
			return "r-f/fail", fmt.Sprintf(`{"token":%q,"error":"no"}`, j["token"]), func() { want(t, state("r-f"), "delayed") }
		}, 200, ""},
		{"fail with another job's token", func() (string, string, func()) {
			j := popped("r-g")
			popped("r-h")
			return "r-h/fail", fmt.Sprintf(`{"token":%q,"error":"no"}`, j["token"]), func() { want(t, state("r-h"), "reserved") }
		}, 409, "another job"},
		{"touch with a gone job's token", func() (string, string, func()) {
			j := popped("r-i")
			mustCall(t, 200, "POST", api+"/jobs/r-i/ack", `{}`)
			popped("r-i")
			return "r-i/touch", fmt.Sprintf(`{"token":%q}`, j["token"]), func() { want(t, state("r-i"), "reserved") }
		}, 404, "not found"},
	}
	for _, bad := range []string{`"1.0"`, `"0.1"`, `"17"`, `"a.b"`, `"1.2.3"`, `"-1.1"`, `""`, `17`, `"18446744073709551616.1"`, `"1.2147483648"`} {
		tests = append(tests, struct {
			name string
			run  func() (string, string, func())
			code int
			says string
		}{"bad token " + bad, func() (string, string, func()) {
			popped("r-bad")
			return "r-bad/ack", `{"token":` + bad + `}`, func() {
				want(t, state("r-bad"), "reserved")
				mustCall(t, 200, "DELETE", api+"/jobs/r-bad", ``)
			}
		}, 400, "token must be"})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, body, after := tt.run()
			code, out := call(t, "POST", api+"/jobs/"+path, body)
			if code != tt.code || tt.says != "" && !strings.Contains(fmt.Sprint(out["error"]), tt.says) {
				t.Fatalf("POST %s %s: %d %v, want %d saying %q", path, body, code, out, tt.code, tt.says)
			}
			after()
		})
	}
}

// A batch ack or fail takes a token per job, each judged on its own; a bad
// token refuses the request.
func TestTokensInBatches(t *testing.T) {
	b := broker(t)
	api := b.URL + "/api/v1"
	for _, id := range []string{"b-1", "b-2", "b-3", "b-4"} {
		mustCall(t, 201, "POST", api+"/jobs", fmt.Sprintf(`{"id":%q,"topic":"batch","body":"x"}`, id))
	}
	jobs := mustCall(t, 200, "POST", api+"/pop", `{"topic":"batch","count":4}`)["jobs"].([]any)
	tok := func(i int) any { return jobs[i].(map[string]any)["token"] }
	out := mustCall(t, 200, "POST", api+"/ack", fmt.Sprintf(`{"jobs":[{"id":"b-1","token":%q},{"id":"b-2","token":%q}]}`, tok(0), tok(2)))
	if fmt.Sprint(out["acked"]) != "[b-1]" || !strings.Contains(fmt.Sprint(out["failed"]), "id:b-2 status:409") {
		t.Fatalf("batch ack: %v", out)
	}
	out = mustCall(t, 200, "POST", api+"/fail", fmt.Sprintf(`{"jobs":[{"id":"b-2","token":%q,"error":"x"},{"id":"b-3","token":%q}]}`, tok(1), tok(0)))
	if len(out["jobs"].([]any)) != 1 || !strings.Contains(fmt.Sprint(out["failed"]), "id:b-3 status:404") {
		t.Fatalf("batch fail: %v", out)
	}
	for _, body := range []string{`{"jobs":[{"id":"b-4","token":"4"}]}`, `{"jobs":[{"id":"b-4","tokens":"4.1"}]}`} {
		mustCall(t, 400, "POST", api+"/ack", body)
	}
	mustCall(t, 400, "POST", api+"/fail", `{"jobs":[{"id":"b-4","token":"4.0"}]}`)
	out = mustCall(t, 200, "POST", api+"/ack", fmt.Sprintf(`{"jobs":[{"id":"b-4","token":%q,"attempt":1}]}`, tok(3)))
	if fmt.Sprint(out["acked"]) != "[b-4]" {
		t.Fatalf("batch ack: %v", out)
	}
}

func want(t *testing.T, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
