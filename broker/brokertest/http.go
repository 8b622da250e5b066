package brokertest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Do sends an HTTP request (with a JSON body when body is not empty) and
// decodes the JSON answer (nil for an empty one). It reports rather than
// fails, so load goroutines may call it.
func Do(method, url, body string) (int, map[string]any, error) {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, nil, err
	}
	if len(data) == 0 {
		return resp.StatusCode, nil, nil
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		return resp.StatusCode, nil, fmt.Errorf("%s %s: answer is not JSON: %q", method, url, data)
	}
	return resp.StatusCode, out, nil
}

// Call is Do from the test's own goroutine: a failure ends the test.
func Call(t testing.TB, method, url, body string) (int, map[string]any) {
	t.Helper()
	code, out, err := Do(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	return code, out
}

// MustCall is Call that also requires the status want.
func MustCall(t testing.TB, want int, method, url, body string) map[string]any {
	t.Helper()
	code, out := Call(t, method, url, body)
	if code != want {
		t.Fatalf("%s %s %s: status %d %v, want %d", method, url, body, code, out, want)
	}
	return out
}

// Lines sends a request on a new TCP connection (a line protocol's: the
// beanstalkd, JSON-RPC, kestrel memcache or text port) and returns the first n lines of
// the answer, "EOF" for each that never came because the connection was
// closed. It waits up to a minute for them: only an answer that never comes
// waits that long, and a loaded machine may take seconds over one.
func Lines(t testing.TB, addr, send string, n int) []string {
	t.Helper()
	return LinesWithin(t, addr, send, n, time.Minute)
}

// LinesWithin is Lines for an answer that may take up to wait (Lines waits a minute).
func LinesWithin(t testing.TB, addr, send string, n int, wait time.Duration) []string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(wait))
	if _, err := io.WriteString(c, send); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	out := make([]string, n)
	for i := range out {
		got, err := r.ReadString('\n')
		if err == io.EOF && got == "" {
			got = "EOF"
		}
		out[i] = got
	}
	return out
}

// Patience is how long Eventually waits: only a condition that never holds
// waits that long, so it is generous enough for a loaded machine.
const Patience = time.Minute

// Eventually checks ok until it holds, failing the test with what if it
// has not held after Patience. A test waits with it for what a broker does
// in the background (a timer's round, another broker's status poll) rather
// than sleeping for a time a slow machine can overrun.
func Eventually(t testing.TB, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(Patience); !ok(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", Patience, what)
		}
	}
}

// Settle waits until missing says none are left, or its count has not
// changed for quiet, and returns the last count: how a load test waits for
// its jobs to finish moving after a fault.
func Settle(missing func() int, quiet time.Duration) int {
	last, since := -1, time.Now()
	for {
		left := missing()
		if left == 0 {
			return 0
		}
		if left != last {
			last, since = left, time.Now()
		}
		if time.Since(since) > quiet {
			return left
		}
		time.Sleep(100 * time.Millisecond)
	}
}
