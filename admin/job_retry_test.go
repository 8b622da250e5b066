package admin_test

import (
	"regexp"
	"testing"

	"github.com/gmq/gmq/broker/brokertest"
)

// gmq job shows a failed job's retry policy: how many attempts it has
// (its topic's default, 25) and when the next one is due (issue 49).
func TestAdminJobShowsItsRetryPolicy(t *testing.T) {
	b := brokertest.Fresh(t, nil)
	id := reserved(t, b, "rp")
	brokertest.MustCall(t, 200, "POST", b.URL+"/api/v1/jobs/"+id+"/fail", `{"attempt":1,"error":"smtp 550"}`)
	code, out, stderr := gmq(b, "job", id)
	if code != 0 {
		t.Fatalf("gmq job: exit %d\n%s%s", code, out, stderr)
	}
	for _, line := range []string{`(?m)^failures\s+1$`, `(?m)^max_attempts\s+25$`, `(?m)^next_attempt_at\s+\d{4}-\d\d-\d\dT`} {
		if !regexp.MustCompile(line).MatchString(out) {
			t.Errorf("gmq job %s shows no line %s:\n%s", id, line, out)
		}
	}
}
