package broker_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
	"github.com/gmq/gmq/job"
)

// Fanout and expiry hold whichever front end pushes and whichever pops, on
// two brokers sharing a Redis.
func TestFanoutAndExpiryAcrossFrontEnds(t *testing.T) {
	conf := func(c *config.Config) {
		c.Topics = map[string]job.TopicConfig{"aging": {"max_age": "1", "expire_to": "dead"}}
	}
	a := brokertest.Fresh(t, conf)
	b := brokertest.Start(t, brokertest.Redis(), conf)

	// A child referenced over memcache on one broker gets the jobs pushed
	// to its parent over HTTP on the other, and over beanstalkd.
	if got := line(t, a.KestrelAddr, "get orders+audit\r\n"); got != "END\r\n" {
		t.Fatalf("get from a new child: %q", got)
	}
	if code := httpDo(t, "POST", b.URL+"/api/v1/jobs", `{"topic":"orders","body":"by http"}`); code != 201 {
		t.Fatalf("HTTP push: %d", code)
	}
	if got := lines(t, b.BeanstalkAddr, "use orders\r\nput 1024 0 10 6\r\nby bsd\r\n", 2); !strings.HasPrefix(got[1], "INSERTED") {
		t.Fatalf("beanstalkd put: %q", got)
	}
	for _, want := range []string{"by http", "by bsd"} {
		if got := lines(t, a.KestrelAddr, "get orders+audit\r\n", 2); got[1] != want+"\r\n" {
			t.Fatalf("get from the child: %q, want %q", got, want)
		}
	}
	if got := lines(t, a.BeanstalkAddr, "watch orders\r\nreserve-with-timeout 0\r\n", 3); !strings.HasPrefix(got[1], "RESERVED") {
		t.Fatalf("the parent keeps its copies: %q", got)
	}

	// beanstalkd has no expiry of its own: a topic's max_age applies, and
	// expire_to moves the job, within the timers' round, to be reserved there.
	if got := lines(t, a.BeanstalkAddr, "use aging\r\nput 0 0 10 4\r\nold!\r\n", 2); !strings.HasPrefix(got[1], "INSERTED") {
		t.Fatalf("beanstalkd put: %q", got)
	}
	time.Sleep(1100 * time.Millisecond) // past max_age: a lower bound, which load only lengthens
	if got := lines(t, b.BeanstalkAddr, "watch aging\r\nreserve-with-timeout 0\r\n", 2); got[1] != "TIMED_OUT\r\n" {
		t.Fatalf("reserve of an expired job: %q", got)
	}
	// The timers move it within their round, later on a loaded machine: the
	// get waits up to 30 s for it (only a failure waits that long).
	if got := lines(t, b.KestrelAddr, "get dead/t=30000\r\n", 2); got[1] != "old!\r\n" {
		t.Fatalf("get from expire_to: %q", got)
	}
	for _, br := range []*brokertest.Broker{a, b} {
		if problems, err := br.Pool.Check(t.Context()); err != nil || len(problems) > 0 {
			t.Fatalf("check: %v %v", problems, err)
		}
	}
}

// An alias ([alias.NAME] destinations) takes pushes on every front end and
// hands each destination a copy; popped, it is empty; flushed or deleted,
// nothing happens.
func TestAliases(t *testing.T) {
	b := brokertest.Fresh(t, func(c *config.Config) {
		c.Aliases = map[string][]string{"everyone": {"mail", "sms"}}
	})
	if code := httpDo(t, "POST", b.URL+"/api/v1/jobs", `{"topic":"everyone","body":"hi"}`); code != 201 {
		t.Fatalf("HTTP push to an alias: %d", code)
	}
	if code := httpDo(t, "POST", b.URL+"/api/v1/jobs", `{"topic":"everyone","body":"hi","id":"one-id"}`); code != 400 {
		t.Errorf("HTTP push to an alias with a client id: %d, want 400", code)
	}
	if got := line(t, b.KestrelAddr, "set everyone 0 0 2\r\nyo\r\n"); got != "STORED\r\n" {
		t.Fatalf("memcache set to an alias: %q", got)
	}
	if got := lines(t, b.BeanstalkAddr, "use everyone\r\nput 1024 0 10 3\r\nhey\r\n", 2); !strings.HasPrefix(got[1], "INSERTED") {
		t.Fatalf("beanstalkd put to an alias: %q", got)
	}
	for _, topic := range []string{"mail", "sms"} {
		for _, want := range []string{"hi", "yo", "hey"} {
			if got := lines(t, b.KestrelAddr, "get "+topic+"\r\n", 2); got[1] != want+"\r\n" {
				t.Fatalf("get %s: %q, want %q", topic, got, want)
			}
		}
	}
	if got := line(t, b.KestrelAddr, "get everyone/t=100\r\n"); got != "END\r\n" {
		t.Errorf("get from an alias: %q", got)
	}
	if got := line(t, b.KestrelAddr, "delete everyone\r\n"); got != "DELETED\r\n" {
		t.Errorf("delete of an alias: %q", got)
	}
	if got := line(t, b.KestrelAddr, "set everyone 0 0 2\r\nyo\r\n"); got != "STORED\r\n" {
		t.Errorf("the alias is still there after a delete: %q", got)
	}
}
