package harness

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"
)

// WaitForLog waits for the broker to log text (its log comes through a pipe).
func WaitForLog(t *testing.T, b *BrokerProc, text string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !strings.Contains(b.Log.String(), text); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the broker never logged %q:\n%s", text, b.Log)
		}
	}
}

// Exchange sends one request on a new connection and reads the first line of the answer.
func Exchange(addr, send string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(3 * time.Second)); err != nil {
		return "", err
	}
	if _, err := c.Write([]byte(send)); err != nil {
		return "", err
	}
	return bufio.NewReader(c).ReadString('\n')
}

// SendOn sends a request on a new connection to addr, closed when the test
// ends, with a deadline for its answers.
func SendOn(t *testing.T, addr, send string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte(send)); err != nil {
		t.Fatal(err)
	}
	return c
}
