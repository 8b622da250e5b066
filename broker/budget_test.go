package broker_test

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
)

// One body budget ([server] body_memory) holds for every port together:
// beanstalkd puts left unfinished spend it, and then a body that needs it
// is refused as busy on each port, in its own words, after a short wait
// (HTTP 503, beanstalkd OUT_OF_MEMORY, kestrel SERVER_ERROR, JSON-RPC an
// error); the refusing connections stay usable where the protocol allows,
// small bodies (a connection's own first 4 KiB) still pass, and once the
// unfinished puts are gone everything passes again.
func TestBodyBudgetSharedByEveryPort(t *testing.T) {
	b := brokertest.Fresh(t, func(c *config.Config) { c.BodyMemory, c.MaxRequestBody = 1<<20, 1<<20 })
	const big = 60000 // a body of 60 KB holds 64 KiB of budget while it arrives
	// Puts of 64 KiB, each sent but for its last bytes, hold 2 of the 32
	// units: 16 spend them all, and 4 more make sure of it.
	var hogs []net.Conn
	for range 20 {
		c, err := net.Dial("tcp", b.BeanstalkAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "put 0 0 60 65535\r\n%s", strings.Repeat("h", 65000))
		hogs = append(hogs, c)
	}
	// Wait until the broker has read them as far as the budget lets them:
	// a small HTTP push is refused once it is spent (after budget.Wait, 2 s).
	// Until then a push passes, leaving a job in t that nothing checks.
	brokertest.Eventually(t, "the unfinished puts spend the budget", func() bool {
		code, _ := brokertest.Call(t, "POST", b.URL+"/api/v1/jobs", `{"topic":"t","body":"x"}`)
		return code == 503
	})
	// Each refusal comes after budget.Wait (2 s): brokertest.Lines reads
	// answers for a minute, far longer, under whatever load the machine has.
	lines := brokertest.Lines

	body := strings.Repeat("x", big)
	checks := []struct {
		name string
		try  func() string
		want string
	}{
		{"HTTP push", func() string {
			code, out := brokertest.Call(t, "POST", b.URL+"/api/v1/jobs", `{"topic":"t","body":"x"}`)
			return fmt.Sprint(code, " ", out["error"])
		}, "503 busy: too many request bodies"},
		{"beanstalkd put of 60 KB, then a small one on the same connection", func() string {
			return strings.Join(lines(t, b.BeanstalkAddr, fmt.Sprintf("put 0 0 60 %d\r\n%s\r\nput 0 0 60 1\r\nx\r\n", big, body), 2), "")
		}, "OUT_OF_MEMORY\r\nINSERTED"},
		{"kestrel set of 60 KB, then a small one on the same connection", func() string {
			return strings.Join(lines(t, b.KestrelAddr, fmt.Sprintf("set q 0 0 %d\r\n%s\r\nset q 0 0 1\r\nx\r\n", big, body), 2), "")
		}, "SERVER_ERROR busy: too many request bodies are being read at once ([server] body_memory): try again\r\nSTORED\r\n"},
		{"JSON-RPC push of 60 KB", func() string {
			return lines(t, b.RPCAddr, `{"method":"Service.Push","params":[{"topic":"t","body":"`+body+`"}],"id":7}`, 1)[0]
		}, `{"id":null,"result":null,"error":"busy: too many request bodies`},
	}
	got := make([]string, len(checks))
	var wg sync.WaitGroup
	for i, c := range checks { // at once: each waits out budget.Wait
		wg.Go(func() { got[i] = c.try() })
	}
	wg.Wait()
	for i, c := range checks {
		if !strings.HasPrefix(got[i], c.want) {
			t.Errorf("%s with the budget spent: %q, want %q...", c.name, got[i], c.want)
		}
	}

	for _, c := range hogs {
		c.Close()
	}
	// The broker sees the hang-ups and gives their budget back: soon, but
	// later on a loaded machine, so wait for a push to pass (each refused
	// one waits out budget.Wait first).
	brokertest.Eventually(t, "HTTP push with the budget free", func() bool {
		code, out := brokertest.Call(t, "POST", b.URL+"/api/v1/jobs", `{"topic":"t","body":"x"}`)
		if code != 201 && code != 503 {
			t.Fatalf("HTTP push with the budget free: %d %v", code, out)
		}
		return code == 201
	})
	if got := lines(t, b.BeanstalkAddr, fmt.Sprintf("put 0 0 60 %d\r\n%s\r\n", big, body), 1)[0]; !strings.HasPrefix(got, "INSERTED") {
		t.Errorf("beanstalkd put of 60 KB with the budget free: %q", got)
	}
	if got := line(t, b.KestrelAddr, fmt.Sprintf("set q 0 0 %d\r\n%s\r\n", big, body)); got != "STORED\r\n" {
		t.Errorf("kestrel set of 60 KB with the budget free: %q", got)
	}
	if got := line(t, b.RPCAddr, `{"method":"Service.Push","params":[{"topic":"t","body":"`+body+`"}],"id":7}`); got != `{"id":7,"result":"success","error":null}`+"\n" {
		t.Errorf("JSON-RPC push of 60 KB with the budget free: %q", got)
	}
}
