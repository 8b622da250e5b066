package beanstalk_test

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
)

// reserve-with-timeout with huge values (issue 20 checked every front end's
// long poll for an overflowed wait that fails at once): the largest a C int
// holds waits, as beanstalkd's does, until a job comes; one past a C long is
// BAD_FORMAT, as beanstalkd's strtol says.
func TestHugeReserveTimeouts(t *testing.T) {
	b := brokertest.Fresh(t, nil)
	c, err := net.Dial("tcp", b.BeanstalkAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("reserve-with-timeout 2147483647\r\n")); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	_ = c.SetReadDeadline(time.Now().Add(700 * time.Millisecond))
	if line, err := r.ReadString('\n'); err == nil {
		t.Fatalf("an empty tube answered %q at once, want a wait", line)
	}
	if got := brokertest.Lines(t, b.BeanstalkAddr, "put 0 0 60 1\r\nx\r\n", 1); !strings.HasPrefix(got[0], "INSERTED ") {
		t.Fatalf("put: %q", got)
	}
	_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
	if line, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(line, "RESERVED ") {
		t.Fatalf("the waiting reserve: %q %v, want the job", line, err)
	}
	if got := brokertest.Lines(t, b.BeanstalkAddr, "reserve-with-timeout 99999999999999999999\r\n", 1); got[0] != "BAD_FORMAT\r\n" {
		t.Fatalf("past a C long: %q, want BAD_FORMAT", got)
	}
}
