package web_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/job"
)

// A failed job's errors over HTTP (issue 49): GET job lists each attempt's,
// oldest first, with its attempt and time: three failed with an error and
// one without show four entries in order; the 11th failure drops the
// oldest; an error past job.ErrorBytes is cut; the dead list shows a dead
// job's errors.
func TestFailureErrorsOverHTTP(t *testing.T) {
	b := brokertest.Fresh(t, nil)
	api := b.URL + "/api/v1"
	mustCall(t, 200, "PUT", api+"/topics/errs-http/config", `{"backoff": "fixed", "backoff_base": 0, "max_attempts": 20}`)
	fail := func(id, body string) {
		t.Helper()
		j := mustCall(t, 200, "GET", api+"/pop?topic=errs-http", ``)
		if j["id"] != id {
			t.Fatalf("popped %v, want %s", j, id)
		}
		mustCall(t, 200, "POST", api+"/jobs/"+id+"/fail", fmt.Sprintf(`{"attempt":%v%s}`, j["attempt"], body))
	}
	// errorsOf is job id's errors as "attempt:error", checking each entry's time.
	errorsOf := func(id string) []string {
		t.Helper()
		j := mustCall(t, 200, "GET", api+"/jobs/"+id, ``)
		var out []string
		last := time.Time{}
		list, _ := j["errors"].([]any)
		for _, e := range list {
			e := e.(map[string]any)
			at, err := time.Parse(time.RFC3339Nano, e["at"].(string))
			if err != nil || at.Before(last) || time.Since(at) > time.Minute {
				t.Errorf("an entry's time %v (%v), after %v", e["at"], err, last)
			}
			last = at
			out = append(out, fmt.Sprintf("%v:%v", e["attempt"], e["error"]))
		}
		return out
	}

	mustCall(t, 201, "POST", api+"/jobs", `{"id":"e-1","topic":"errs-http","body":"x"}`)
	for _, body := range []string{`,"error":"smtp 550"`, `,"error":"smtp 451"`, `,"error":"dns"`, ``} {
		fail("e-1", body)
	}
	want := []string{"1:smtp 550", "2:smtp 451", "3:dns", "4:" + job.NoReason}
	if got := errorsOf("e-1"); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("errors after four failures: %q, want %q", got, want)
	}
	for i := 5; i <= 11; i++ {
		fail("e-1", fmt.Sprintf(`,"error":"error %d"`, i))
	}
	got := errorsOf("e-1")
	if len(got) != job.ErrorsKept || got[0] != "2:smtp 451" || got[9] != "11:error 11" {
		t.Fatalf("errors after 11 failures: %q, want attempts 2 to 11", got)
	}
	mustCall(t, 200, "DELETE", api+"/jobs/e-1", ``)

	mustCall(t, 201, "POST", api+"/jobs", `{"id":"e-long","topic":"errs-http","body":"x"}`)
	fail("e-long", `,"error":"`+strings.Repeat("z", 2*job.ErrorBytes)+`"`)
	if got := errorsOf("e-long"); len(got) != 1 || got[0] != "1:"+strings.Repeat("z", job.ErrorBytes) {
		t.Fatalf("a long error kept as %d entries, the first %d bytes", len(got), len(got[0]))
	}
	mustCall(t, 200, "DELETE", api+"/jobs/e-long", ``)

	mustCall(t, 201, "POST", api+"/jobs", `{"id":"e-dead","topic":"errs-http","body":"x","retry":{"max_attempts":2}}`)
	fail("e-dead", `,"error":"first"`)
	fail("e-dead", `,"error":"second"`)
	dead := mustCall(t, 200, "GET", api+"/topics/errs-http/dead", ``)
	list := dead["jobs"].([]any)
	if len(list) != 1 {
		t.Fatalf("dead list: %v", dead)
	}
	var listed []string
	kept, _ := list[0].(map[string]any)["errors"].([]any)
	for _, e := range kept {
		e := e.(map[string]any)
		listed = append(listed, fmt.Sprintf("%v:%v", e["attempt"], e["error"]))
	}
	if strings.Join(listed, "|") != "1:first|2:second" {
		t.Fatalf("the dead list's errors: %q", listed)
	}

	// A job that never failed shows none.
	mustCall(t, 201, "POST", api+"/jobs", `{"id":"e-fine","topic":"errs-http","body":"x"}`)
	if j := mustCall(t, 200, "GET", api+"/jobs/e-fine", ``); j["errors"] != nil {
		t.Fatalf("a job that never failed: %v", j)
	}
}
