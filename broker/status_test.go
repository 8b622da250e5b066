package broker_test

import (
	"bufio"
	"io"
	"net"
	"net/rpc/jsonrpc"
	"strings"
	"testing"

	"github.com/gmq/gmq/broker/brokertest"
)

func TestMain(m *testing.M) { brokertest.Main(m) }

// line sends a request on a new connection and returns the first line of
// the answer ("EOF" if the connection was closed without one).
func line(t *testing.T, addr, send string) string {
	t.Helper()
	return lines(t, addr, send, 1)[0]
}

// httpDo sends an HTTP request and returns the status (call, for the answer too).
func httpDo(t *testing.T, method, url, body string) int {
	t.Helper()
	code, _ := call(t, method, url, body)
	return code
}

// lines sends a request on a new connection and returns the first n lines.
var lines = brokertest.Lines

func rpcPush(t *testing.T, addr, topic string) error {
	t.Helper()
	c, err := jsonrpc.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var reply string
	return c.Call("Service.Push", map[string]any{"topic": topic, "body": "rpc"}, &reply)
}

// eventually retries check until it passes: a status set through one
// broker reaches another within its status poll (100 ms), or later on a
// loaded machine; only a failure waits brokertest.Patience.
func eventually(t *testing.T, what string, check func() bool) {
	t.Helper()
	brokertest.Eventually(t, what, check)
}

// The server status set through one broker holds on every front end of
// another broker sharing the Redis.
func TestServerStatusAcrossBrokersAndFrontEnds(t *testing.T) {
	a := brokertest.Fresh(t, nil)
	b := brokertest.Start(t, brokertest.Redis(), nil)
	api := b.URL + "/api/v1"
	for range 3 {
		if code := httpDo(t, "POST", api+"/jobs", `{"topic":"s","body":"x"}`); code != 201 {
			t.Fatalf("push while up: %d", code)
		}
	}
	// A reservation taken before the status changes, over beanstalkd.
	held, err := net.Dial("tcp", b.BeanstalkAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	hr := bufio.NewReader(held)
	io.WriteString(held, "watch s\r\nreserve\r\n")
	hr.ReadString('\n') // WATCHING 2
	reserved, _ := hr.ReadString('\n')
	hr.ReadString('\n') // the body
	var id string
	if f := strings.Fields(reserved); len(f) == 3 && f[0] == "RESERVED" {
		id = f[1]
	} else {
		t.Fatalf("reserve: %q", reserved)
	}

	if code := httpDo(t, "PUT", a.URL+"/api/v1/status", `{"status":"readonly"}`); code != 200 {
		t.Fatalf("set readonly: %d", code)
	}
	eventually(t, "ReadOnly on the other broker's HTTP push", func() bool {
		return httpDo(t, "POST", api+"/jobs", `{"topic":"s","body":"x"}`) == 503
	})
	if got := line(t, b.BeanstalkAddr, "put 0 0 10 1\r\nx\r\n"); got != "DRAINING\r\n" {
		t.Errorf("beanstalkd put while read-only: %q", got)
	}
	if got := line(t, b.KestrelAddr, "set s 0 0 1\r\nx\r\n"); !strings.HasPrefix(got, "SERVER_ERROR ") {
		t.Errorf("kestrel set while read-only: %q", got)
	}
	if err := rpcPush(t, b.RPCAddr, "s"); err == nil || !strings.Contains(err.Error(), "readonly") {
		t.Errorf("JSON-RPC push while read-only: %v", err)
	}
	if code := httpDo(t, "POST", api+"/topics/s/flush", ``); code != 503 {
		t.Errorf("flush while read-only: %d", code)
	}
	// Queues drain: pops go on, over every protocol.
	if code := httpDo(t, "GET", api+"/pop?topic=s", ``); code != 200 {
		t.Errorf("HTTP pop while read-only: %d", code)
	}
	if got := line(t, b.KestrelAddr, "get s\r\n"); !strings.HasPrefix(got, "VALUE s ") {
		t.Errorf("kestrel get while read-only: %q", got)
	}
	if got := line(t, b.KestrelAddr, "status\r\n"); got != "READONLY\r\n" {
		t.Errorf("kestrel status: %q", got)
	}

	if got := line(t, a.KestrelAddr, "status quiescent\r\n"); got != "END\r\n" {
		t.Fatalf("kestrel status quiescent: %q", got)
	}
	eventually(t, "Quiescent on the other broker's HTTP pop", func() bool {
		return httpDo(t, "GET", api+"/pop?topic=s", ``) == 503
	})
	if got := line(t, b.BeanstalkAddr, "watch s\r\nreserve-with-timeout 0\r\n"); got != "WATCHING 2\r\n" {
		t.Fatalf("watch: %q", got)
	}
	if got := line(t, b.KestrelAddr, "get s/peek\r\n"); !strings.HasPrefix(got, "SERVER_ERROR ") {
		t.Errorf("kestrel peek while quiescent: %q", got)
	}
	// Finishing a reservation taken before is allowed.
	io.WriteString(held, "delete "+id+"\r\n")
	if got, _ := hr.ReadString('\n'); got != "DELETED\r\n" {
		t.Errorf("beanstalkd delete of its own reservation while quiescent: %q", got)
	}

	if code := httpDo(t, "PUT", b.URL+"/api/v1/status", `{"status":"up"}`); code != 200 {
		t.Fatalf("set up: %d", code)
	}
	eventually(t, "Up again on the first broker", func() bool {
		return httpDo(t, "POST", a.URL+"/api/v1/jobs", `{"topic":"s","body":"x"}`) == 201
	})
	if got := line(t, a.KestrelAddr, "status bogus\r\n"); !strings.HasPrefix(got, "CLIENT_ERROR ") {
		t.Errorf("kestrel unknown status: %q", got)
	}
	if code := httpDo(t, "PUT", a.URL+"/api/v1/status", `{"status":"sideways"}`); code != 400 {
		t.Errorf("HTTP unknown status: %d", code)
	}
}
