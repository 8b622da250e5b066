package beanstalk_test

import (
	"fmt"
	"testing"

	"github.com/gmq/gmq/broker/brokertest"
)

// On a tube that keeps completed jobs, beanstalkd's delete of the job its
// connection reserved completes it (HTTP shows it completed, with no
// result), and beanstalkd's clients see it gone: peek, stats-job,
// kick-job and delete answer NOT_FOUND, as beanstalkd's do after a delete.
func TestCompletedJobIsGoneToBeanstalkd(t *testing.T) {
	b := broker(t)
	brokertest.MustCall(t, 200, "PUT", b.URL+"/api/v1/topics/kept/config", `{"keep_completed": 600}`)
	w := dial(t, b.BeanstalkAddr)
	w.must("use kept\r\n", "USING kept\r\n")
	w.must("watch kept\r\n", "WATCHING 2\r\n")
	id := w.put(1, 0, 60, "x")
	w.must("reserve-with-timeout 0\r\n", fmt.Sprintf("RESERVED %d 1\r\nx\r\n", id))
	w.must(fmt.Sprintf("delete %d\r\n", id), "DELETED\r\n")
	got := brokertest.MustCall(t, 200, "GET", fmt.Sprintf("%s/api/v1/jobs/%d", b.URL, id), "")
	if got["state"] != "completed" || got["result"] != nil {
		t.Fatalf("over HTTP: %v, want completed with no result", got)
	}
	for _, cmd := range []string{"peek %d", "stats-job %d", "kick-job %d", "delete %d"} {
		w.must(fmt.Sprintf(cmd+"\r\n", id), "NOT_FOUND\r\n")
	}
}
