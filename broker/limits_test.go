package broker_test

import (
	"strings"
	"testing"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
	"github.com/gmq/gmq/job"
)

// A full topic refuses pushes on every front end, each in its words; the
// limit set at run time through one broker holds on another at once.
func TestFullTopicOnEveryFrontEnd(t *testing.T) {
	// Brokers sharing a Redis share conf.ini's topic sections: each writes
	// them at start and at reload.
	conf := func(c *config.Config) { c.Topics = map[string]job.TopicConfig{"small": {"max_item_size": "3"}} }
	a := brokertest.Fresh(t, conf)
	b := brokertest.Start(t, brokertest.Redis(), conf)
	if code := httpDo(t, "PUT", a.URL+"/api/v1/topics/q/config", `{"max_items": 2}`); code != 200 {
		t.Fatalf("set max_items: %d", code)
	}
	api := b.URL + "/api/v1"
	for range 2 {
		if code := httpDo(t, "POST", api+"/jobs", `{"topic":"q","body":"x"}`); code != 201 {
			t.Fatalf("push under the limit: %d", code)
		}
	}
	if code := httpDo(t, "POST", api+"/jobs", `{"topic":"q","body":"x"}`); code != 507 {
		t.Errorf("HTTP push to a full topic: %d, want 507", code)
	}
	if got := lines(t, b.BeanstalkAddr, "use q\r\nput 0 0 10 1\r\nx\r\n", 2); got[1] != "OUT_OF_MEMORY\r\n" {
		t.Errorf("beanstalkd put to a full tube: %q", got)
	}
	if got := line(t, b.KestrelAddr, "set q 0 0 1\r\nx\r\n"); got != "NOT_STORED\r\n" {
		t.Errorf("kestrel set to a full queue: %q", got)
	}
	if err := rpcPush(t, b.RPCAddr, "q"); err == nil || !strings.Contains(err.Error(), "full") {
		t.Errorf("JSON-RPC push to a full topic: %v", err)
	}
	// conf.ini's limits hold too, and a run-time change can lift them.
	if code := httpDo(t, "POST", api+"/jobs", `{"topic":"small","body":"toolong"}`); code != 413 {
		t.Errorf("HTTP push over max_item_size: %d, want 413", code)
	}
	if code := httpDo(t, "PUT", api+"/topics/small/config", `{"max_item_size": 0}`); code != 200 {
		t.Fatalf("lift max_item_size: %d", code)
	}
	if code := httpDo(t, "POST", api+"/jobs", `{"topic":"small","body":"toolong"}`); code != 201 {
		t.Errorf("HTTP push after the limit was lifted: %d", code)
	}
	// null takes the run-time change back: conf.ini's limit again.
	if code := httpDo(t, "PUT", api+"/topics/small/config", `{"max_item_size": null}`); code != 200 {
		t.Fatalf("take the change back: %d", code)
	}
	if code := httpDo(t, "POST", api+"/jobs", `{"topic":"small","body":"toolong"}`); code != 413 {
		t.Errorf("HTTP push over conf.ini's max_item_size again: %d, want 413", code)
	}
	if code := httpDo(t, "PUT", api+"/topics/small/config", `{"max_itemz": 1}`); code != 400 {
		t.Errorf("an unknown setting: %d, want 400", code)
	}
}
