package php_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
)

// A job cancelled while its handler runs: the heartbeat's touch (TTR 2 s:
// a touch a second) learns it and the worker throws a JobCancelled into
// the handler (its sleep of a minute cut short), or the handler's own
// progress() throws it; either way the job ends cancelled, neither acked
// nor failed, and the worker logs it.
func TestWorkerStopsACancelledHandler(t *testing.T) {
	for _, tc := range []struct{ name, body string }{
		{"Touch", `{\"sleep\":60}","TTR":2`},
		{"Progress", `{\"progress\":true}","TTR":60`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := fresh(t, nil)
			brokertest.MustCall(t, 200, "PUT", b.URL+"/api/v1/topics/cancel/config", `{"keep_completed":3600}`)
			id := push(t, b.URL, `{"topic":"cancel","body":"`+tc.body+`}`)
			w := worker(t, b.URL, "cancel", 1, 1, 1) // ends after one job
			w.expect(t, `^start `+id+` 1 `, 10*time.Second)
			if tc.name == "Progress" {
				waitFor(t, "the first progress", func() bool { _, j := peek(t, b.URL, id); return j["progress"] != nil })
			}
			if j := brokertest.MustCall(t, 202, "POST", b.URL+"/api/v1/jobs/"+id+"/cancel", ""); j["cancelling"] != true {
				t.Fatalf("cancel: %v", j)
			}
			w.expect(t, `^cancelled `+id+` `, 10*time.Second)
			w.exit(t, 10*time.Second)
			if code, j := peek(t, b.URL, id); code != 200 || j["state"] != "cancelled" || j["failures"] != 0.0 {
				t.Errorf("job after the cancel: %d %v, want cancelled, never failed", code, j)
			}
			if want := "job " + id + " was cancelled: its handler was stopped; neither acked nor failed"; !strings.Contains(w.errors(), want) {
				t.Errorf("the log lacks %q:\n%s", want, w.errors())
			}
		})
	}
}

// A handler that finishes after its job was cancelled, told nothing (its
// first touch is 30 s away): the ack's 410 is logged, the job stays
// cancelled.
func TestWorkerLogsTheAckOfACancelledJob(t *testing.T) {
	b := fresh(t, nil)
	brokertest.MustCall(t, 200, "PUT", b.URL+"/api/v1/topics/cancel/config", `{"keep_completed":3600}`)
	id := push(t, b.URL, `{"topic":"cancel","body":"{\"sleep\":1}","TTR":60}`)
	w := worker(t, b.URL, "cancel", 1, 1, 1) // ends after one job
	w.expect(t, `^start `+id+` 1 `, 10*time.Second)
	brokertest.MustCall(t, 202, "POST", b.URL+"/api/v1/jobs/"+id+"/cancel", "")
	w.expect(t, `^done `+id+` `, 10*time.Second)
	w.exit(t, 10*time.Second)
	if code, j := peek(t, b.URL, id); code != 200 || j["state"] != "cancelled" {
		t.Errorf("job after the cancel: %d %v, want cancelled", code, j)
	}
	if want := "job " + id + " was cancelled while its handler ran: not acked"; !strings.Contains(w.errors(), want) {
		t.Errorf("the log lacks %q:\n%s", want, w.errors())
	}
}

// waitFor polls ok every 20 ms for up to 10 s.
func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within 10 s: %s", what)
		}
	}
}
