package beanstalk_test

import (
	"fmt"
	"testing"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/internal/redistest"
)

// A consumer watching 2,000 tubes (about 500 in each of the test broker's
// 4 buckets) reserves the one ready job, as beanstalkd does
// (pool TestPopBestPlainManyTopicsInABucket).
func TestReserveWatchingManyTubes(t *testing.T) {
	if testing.Short() {
		t.Skip("differential test")
	}
	steps := []step{{cmd: "use t7\r\n"}, {cmd: "put 1 0 10 1\r\nx\r\n"}}
	for i := range 2000 {
		steps = append(steps, step{cmd: fmt.Sprintf("watch t%d\r\n", i)})
	}
	steps = append(steps, step{cmd: "reserve-with-timeout 0\r\n"})
	oracle := run(t, startBeanstalkd(t), steps)
	b := brokertest.Start(t, redistest.Start(t), nil)
	got := run(t, b.BeanstalkAddr, steps)
	last := len(steps) - 1
	if got[last] != oracle[last] {
		t.Errorf("reserve over 2,000 tubes: gmq %q, beanstalkd %q", got[last], oracle[last])
	}
}
