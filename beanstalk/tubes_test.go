package beanstalk_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gmq/gmq/broker/brokertest"
)

// tubeCheck is one command on one broker's connection and a part of the
// reply it must hold. In send and want, $id stands for the case's job.
type tubeCheck struct {
	on         int // 0 or 1: which broker's connection
	send, want string
}

// yamlList is the whole reply of list-tubes listing names.
func yamlList(names ...string) string {
	doc := "---\n- " + strings.Join(names, "\n- ") + "\n"
	return fmt.Sprintf("OK %d\r\n%s\r\n", len(doc), doc)
}

// The tube lifetimes the differential test cannot show, as beanstalkd has
// no dead jobs and no second server: a dead job (failed past max_attempts,
// buried to beanstalkd's clients) keeps its tube as a buried one does, and
// a tube that only a connection to another broker on the same Redis uses
// is not known here (docs/protocols.md says so).
func TestTubeLifetimeBeyondBeanstalkd(t *testing.T) {
	cases := []struct {
		name   string
		before func(t *testing.T, b *brokertest.Broker, w [2]*wire) uint64 // returns $id
		checks []tubeCheck
	}{{
		name: "a dead job keeps its tube",
		before: func(t *testing.T, b *brokertest.Broker, _ [2]*wire) uint64 {
			pushed := brokertest.MustCall(t, 201, "POST", b.URL+"/api/v1/jobs",
				`{"id":"dd-1","topic":"dd","body":"x","retry":{"max_attempts":1}}`)
			brokertest.MustCall(t, 200, "GET", b.URL+"/api/v1/pop?topic=dd", "")
			brokertest.MustCall(t, 200, "POST", b.URL+"/api/v1/jobs/dd-1/fail", `{"attempt":1,"error":"e"}`)
			id, ok := pushed["internal_id"].(float64)
			if !ok {
				t.Fatalf("push: no internal_id in %v", pushed)
			}
			return uint64(id)
		},
		checks: []tubeCheck{
			{0, "stats-job $id\r\n", "state: buried\n"},
			{0, "list-tubes\r\n", yamlList("default", "dd")},
			{1, "list-tubes\r\n", yamlList("default", "dd")},
			{0, "stats-tube dd\r\n", "current-jobs-buried: 1\n"},
			{0, "stats\r\n", "current-tubes: 2\n"},
			{0, "delete $id\r\n", "DELETED\r\n"},
			{0, "list-tubes\r\n", yamlList("default")},
			{0, "stats-tube dd\r\n", "NOT_FOUND\r\n"},
			{0, "stats\r\n", "current-tubes: 1\n"},
		},
	}, {
		name: "another broker's connection is not known here",
		before: func(t *testing.T, _ *brokertest.Broker, w [2]*wire) uint64 {
			w[0].must("use x\r\n", "USING x\r\n")
			return w[0].put(0, 0, 60, "x")
		},
		checks: []tubeCheck{
			{1, "list-tubes\r\n", yamlList("default", "x")}, // the job holds it
			{0, "delete $id\r\n", "DELETED\r\n"},
			{0, "list-tubes\r\n", yamlList("default", "x")}, // used here
			{0, "stats-tube x\r\n", "current-using: 1\n"},
			{1, "list-tubes\r\n", yamlList("default")},
			{1, "stats-tube x\r\n", "NOT_FOUND\r\n"},
			{1, "stats\r\n", "current-tubes: 1\n"},
		},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := brokertest.Fresh(t, nil)
			other := brokertest.Start(t, brokertest.Redis(), nil)
			w := [2]*wire{dial(t, b.BeanstalkAddr), dial(t, other.BeanstalkAddr)}
			id := fmt.Sprint(c.before(t, b, w))
			for i, ch := range c.checks {
				send, want := strings.ReplaceAll(ch.send, "$id", id), strings.ReplaceAll(ch.want, "$id", id)
				if got := w[ch.on].do(send); !strings.Contains(got, want) {
					t.Errorf("check %d, broker %d, %q:\n got %q\n want it to hold %q", i, ch.on, send, got, want)
				}
			}
		})
	}
}
