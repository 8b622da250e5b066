package gmqrpc_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/rpc"
	"net/rpc/jsonrpc"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
)

func TestMain(m *testing.M) { brokertest.Main(m) }

// runClient runs a client script of testdata/ against a live broker.
func runClient(t *testing.T, interpreter, script, requireEnv string) {
	t.Helper()
	bin, err := exec.LookPath(interpreter)
	if err != nil {
		if os.Getenv(requireEnv) == "1" {
			t.Fatalf("%s not found", interpreter)
		}
		t.Skipf("%s not found", interpreter)
	}
	b := brokertest.Fresh(t, nil)
	host, port, err := net.SplitHostPort(b.RPCAddr)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, script, host, port).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", interpreter, script, err, out)
	}
	t.Logf("%s", out)
}

func TestPythonClient(t *testing.T) {
	runClient(t, "python3", "testdata/rpc_client.py", "GMQ_REQUIRE_PYTHON")
}

func TestPHPClient(t *testing.T) { runClient(t, "php", "testdata/rpc_client.php", "GMQ_REQUIRE_PHP") }

// Go's own JSON-RPC client, which the original gmq's Go users had.
func TestGoClient(t *testing.T) {
	b := brokertest.Fresh(t, nil)
	c := dialRPC(t, b.RPCAddr)
	var reply string
	if err := c.Call("Service.Push", map[string]string{"id": "go_1", "topic": "go", "body": "x", "TTR": "9"}, &reply); err != nil || reply != "success" {
		t.Fatalf("push: %q %v", reply, err)
	}
	var job map[string]string
	if err := c.Call("Service.Pop", []string{"go"}, &job); err != nil || job["id"] != "go_1" || job["TTR"] != "9" {
		t.Fatalf("pop: %v %v", job, err)
	}
	if err := c.Call("Service.Ack", "go_1", &reply); err != nil {
		t.Fatal(err)
	}
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	if err := c.Call("Service.Push", map[string]any{"id": "go_2", "topic": "go", "body": "x", "retry": map[string]any{"max_attempts": 1}, "traceparent": tp}, &reply); err != nil {
		t.Fatal(err)
	}
	if err := c.Call("Service.Pop", []string{"go"}, &job); err != nil || job["id"] != "go_2" || job["traceparent"] != tp {
		t.Fatalf("pop: %v %v", job, err)
	}
	if err := c.Call("Service.Fail", map[string]any{"id": "go_2", "error": "broken"}, &reply); err != nil || reply != "dead" {
		t.Fatalf("fail past max_attempts: %q %v", reply, err)
	}
	if err := c.Call("Service.Fail", map[string]any{"id": "go_2", "error": "again"}, &reply); err == nil {
		t.Fatal("a second fail of a dead job was accepted")
	}
	if err := c.Call("Service.Push", map[string]any{"topic": "go", "body": "x", "delay": true}, &reply); err == nil {
		t.Fatal("a bool delay was accepted")
	}
	if err := c.Call("Service.Push", map[string]any{"topic": "a", "Topic": "b", "body": "x"}, &reply); err == nil || !strings.Contains(err.Error(), "given twice") {
		t.Fatalf("names differing only in case: %v, want them refused", err)
	}
	if err := c.Call("Service.Push", map[string]any{"topic": "", "body": "x"}, &reply); err == nil || !strings.Contains(err.Error(), "topic name is empty") {
		t.Fatalf("an empty topic: %v, want it refused", err)
	}
}

// A job pushed over JSON-RPC pops over HTTP, and the other way round.
func TestAcrossProtocols(t *testing.T) {
	b := brokertest.Fresh(t, nil)
	c := dialRPC(t, b.RPCAddr)
	var reply string
	if err := c.Call("Service.Push", map[string]string{"id": "rpc_to_http", "topic": "x", "body": "a"}, &reply); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(b.URL + "/api/v1/pop?topic=x")
	if err != nil {
		t.Fatal(err)
	}
	var job map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&job); err != nil || job["id"] != "rpc_to_http" {
		t.Fatalf("HTTP pop of an RPC push: %v %v", job, err)
	}
	resp.Body.Close()
	resp, err = http.Post(b.URL+"/api/v1/jobs", "application/json", strings.NewReader(`{"id":"http_to_rpc","topic":"y","body":"b"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var got map[string]string
	if err := c.Call("Service.Pop", []string{"y"}, &got); err != nil || got["id"] != "http_to_rpc" || got["body"] != "b" {
		t.Fatalf("RPC pop of an HTTP push: %v %v", got, err)
	}
}

// One request streamed without end (the issue saw 93 MB grow to 822 MB) is
// cut off past the request limit: the client is told why and disconnected,
// and the next client is served.
func TestRequestSizeLimit(t *testing.T) {
	b := brokertest.Fresh(t, func(c *config.Config) { c.MaxBody = 1024 })
	c, err := net.Dial("tcp", b.RPCAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	go func() { // the writer stops when the broker closes the connection
		_, _ = io.WriteString(c, `{"method":"Service.Push","params":[{"topic":"t","body":"`)
		chunk := strings.Repeat("x", 64<<10)
		for range 64 {
			if _, err := io.WriteString(c, chunk); err != nil {
				return
			}
		}
	}()
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || !strings.Contains(line, "request too large") {
		t.Fatalf("answer to a 4 MiB request: %q %v, want a request-too-large error", line, err)
	}
	rc := dialRPC(t, b.RPCAddr)
	var reply string
	if err := rc.Call("Service.Push", map[string]string{"topic": "t", "body": strings.Repeat("é", 512)}, &reply); err != nil {
		t.Fatalf("a push of the largest body (escaped, within the limit): %v", err)
	}
}

// dialRPC connects a JSON-RPC client to addr, closed when the test ends.
func dialRPC(t *testing.T, addr string) *rpc.Client {
	t.Helper()
	c, err := jsonrpc.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Service.Update changes a waiting job as HTTP's PATCH does.
func TestUpdateOverRPC(t *testing.T) {
	b := brokertest.Fresh(t, nil)
	c := dialRPC(t, b.RPCAddr)
	var reply string
	if err := c.Call("Service.Push", map[string]string{"id": "up_1", "topic": "up", "body": "draft", "delay": "3600"}, &reply); err != nil {
		t.Fatal(err)
	}
	if err := c.Call("Service.Update", map[string]any{"id": "up_1", "delay": 0, "priority": 1, "body": "final"}, &reply); err != nil || reply != "ready" {
		t.Fatalf("update: %q %v", reply, err)
	}
	var job map[string]string
	if err := c.Call("Service.Pop", []string{"up"}, &job); err != nil || job["id"] != "up_1" || job["body"] != "final" || job["priority"] != "1" {
		t.Fatalf("pop after the update: %v %v", job, err)
	}
	if err := c.Call("Service.Update", map[string]any{"id": "up_1", "priority": 5}, &reply); err == nil || err.Error() != `conflict: update "up_1": the job is reserved` {
		t.Fatalf("update of a reserved job: %v", err)
	}
	if err := c.Call("Service.Update", map[string]any{"id": "up_1", "ttr": 5}, &reply); err == nil || !strings.Contains(err.Error(), "ttr") {
		t.Fatalf("an unknown field: %v", err)
	}
}

// Service.Push takes "unique" as HTTP does: a held key is an error naming
// the job that holds it; a replace answers "success" and changes that job.
func TestUniquePushOverRPC(t *testing.T) {
	b := brokertest.Fresh(t, nil)
	c := dialRPC(t, b.RPCAddr)
	var reply string
	push := func(body, mode string) error {
		return c.Call("Service.Push", map[string]any{"topic": "un", "body": body, "id": "",
			"unique": map[string]any{"key": "user-42", "for": 60, "mode": mode}}, &reply)
	}
	if err := c.Call("Service.Push", map[string]any{"id": "un_1", "topic": "un", "body": "first",
		"unique": map[string]any{"key": "user-42", "for": 60}}, &reply); err != nil {
		t.Fatal(err)
	}
	if err := push("second", "reject"); err == nil || !strings.Contains(err.Error(), `held by job un_1`) {
		t.Fatalf("a held key: %v", err)
	}
	if err := push("third", "replace"); err != nil || reply != "success" {
		t.Fatalf("replace: %q %v", reply, err)
	}
	var job map[string]string
	if err := c.Call("Service.Pop", []string{"un"}, &job); err != nil || job["id"] != "un_1" || job["body"] != "third" {
		t.Fatalf("pop after the replace: %v %v", job, err)
	}
}

// Service.Push takes "group"; Service.Pop's job shows it.
func TestGroupOverRPC(t *testing.T) {
	b := brokertest.Fresh(t, nil)
	c := dialRPC(t, b.RPCAddr)
	var reply string
	if err := c.Call("Service.Push", map[string]any{"id": "g_1", "topic": "gr", "body": "x", "group": "tenant-42"}, &reply); err != nil {
		t.Fatal(err)
	}
	var job map[string]string
	if err := c.Call("Service.Pop", []string{"gr"}, &job); err != nil || job["group"] != "tenant-42" {
		t.Fatalf("pop: %v %v", job, err)
	}
}

// Service.Push takes a JSON object or array as the body, and Service.Pop
// gives it back as JSON; a string stays a string, even one holding JSON.
// Service.Update sets a body alike; a number is refused by what a body may be.
func TestJSONBodyOverRPC(t *testing.T) {
	b := brokertest.Fresh(t, nil)
	c := dialRPC(t, b.RPCAddr)
	var reply string
	for _, body := range []any{map[string]any{"to": "a", "n": []any{1.0}}, []any{"x", map[string]any{}}, `{"to":"a"}`} {
		if err := c.Call("Service.Push", map[string]any{"topic": "js", "body": body}, &reply); err != nil {
			t.Fatal(err)
		}
		var job map[string]any
		if err := c.Call("Service.Pop", []string{"js"}, &job); err != nil || !reflect.DeepEqual(job["body"], body) {
			t.Fatalf("pop of %#v: %#v %v", body, job["body"], err)
		}
		if job["TTR"] != "60" {
			t.Fatalf("the other fields are strings still: %#v", job)
		}
	}
	if err := c.Call("Service.Push", map[string]any{"id": "js_1", "topic": "js", "body": "x", "delay": 3600}, &reply); err != nil {
		t.Fatal(err)
	}
	if err := c.Call("Service.Update", map[string]any{"id": "js_1", "delay": 0, "body": map[string]any{"v": 2.0}}, &reply); err != nil {
		t.Fatal(err)
	}
	var job map[string]any
	if err := c.Call("Service.Pop", []string{"js"}, &job); err != nil || !reflect.DeepEqual(job["body"], map[string]any{"v": 2.0}) {
		t.Fatalf("pop after an update to an object: %#v %v", job, err)
	}
	const says = "body must be a string, an object or an array, got 5"
	if err := c.Call("Service.Push", map[string]any{"topic": "js", "body": 5}, &reply); err == nil || !strings.Contains(err.Error(), says) {
		t.Fatalf("a number as the body: %v", err)
	}
}
