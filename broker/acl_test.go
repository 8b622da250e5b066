package broker_test

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/internal/redistest"
)

// minimalACL is the ACL docs/operations.md documents for gmq's Redis user: its keys
// and channels (prefix gmq), and every command but the dangerous ones,
// INFO excepted (the dashboard's memory and the metrics read it).
const minimalACL = "on >s3cret ~gmq:* &gmq:* +@all -@dangerous +info"

// A broker whose Redis user has only the documented ACL does everything:
// every script, the ids, the wake-up channel, the history, the stats.
func TestRestrictedRedisUser(t *testing.T) {
	srv := redistest.Start(t)
	if _, err := srv.Do(append([]string{"ACL", "SETUSER", "gmq"}, strings.Fields(minimalACL)...)...); err != nil {
		t.Fatal(err)
	}
	b := brokertest.StartURL(t, "redis://gmq:s3cret@"+srv.Addr, nil)
	api := b.URL + "/api/v1"
	for i := range 5 {
		mustCall(t, 201, "POST", api+"/jobs", fmt.Sprintf(`{"id":"acl-%d","topic":"acl","body":"x","delay":%v}`, i, float64(i%2)*0.1))
	}
	mustCall(t, 200, "PUT", api+"/topics/acl/config", `{"max_attempts":1}`)
	// A pop waits up to a minute for the delayed jobs (0.1 s): it answers
	// as soon as one is ready, so only a failure waits that long.
	j := mustCall(t, 200, "GET", api+"/pop?topic=acl&timeout=60", ``)
	mustCall(t, 200, "POST", api+"/jobs/"+j["id"].(string)+"/fail", `{"error":"no"}`)
	for range 4 {
		j := mustCall(t, 200, "GET", api+"/pop?topic=acl&timeout=60", ``)
		mustCall(t, 200, "POST", api+"/jobs/"+j["id"].(string)+"/ack", ``)
	}
	for _, path := range []string{"/stats", "/topics", "/redis", "/buckets", "/history", "/topics/acl/dead"} {
		mustCall(t, 200, "GET", api+path, ``)
	}
	if problems, err := b.Pool.Check(t.Context()); err != nil || len(problems) > 0 {
		t.Fatalf("check: %v %v", problems, err)
	}
	// And the ACL holds: the user cannot touch keys outside gmq's prefix.
	host, port, _ := strings.Cut(srv.Addr, ":")
	out, _ := exec.Command("redis-cli", "-h", host, "-p", port, "--user", "gmq", "--pass", "s3cret", "--no-auth-warning",
		"set", "other:key", "1").CombinedOutput()
	if !strings.Contains(string(out), "NOPERM") {
		t.Fatalf("the restricted user wrote outside gmq's keys: %q", out)
	}
}
