package webhook_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
	"github.com/gmq/gmq/job"
)

// The secret docs/workflows.md's example uses.
const docsSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// docsEndpoint is the PHP endpoint of docs/workflows.md, as written.
func docsEndpoint(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("../docs/workflows.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "## HTTP push delivery")
	_, code, ok2 := strings.Cut(section, "```php\n")
	code, _, ok3 := strings.Cut(code, "```")
	if !ok || !ok2 || !ok3 || !strings.Contains(code, docsSecret) {
		t.Fatal("docs/workflows.md has no PHP endpoint in its HTTP push delivery section")
	}
	return code
}

// TestDeliverToPHP runs the docs' endpoint.php under PHP's built-in server
// (php -S), with the PHP client beside it as in a checkout, and has two
// brokers deliver to it: every job completes with the endpoint's result,
// and a request that gmq did not sign is refused by the endpoint.
func TestDeliverToPHP(t *testing.T) {
	php := brokertest.Tool(t, "php", "GMQ_REQUIRE_PHP")
	dir := t.TempDir()
	root, _ := filepath.Abs("..")
	if err := os.MkdirAll(filepath.Join(dir, "clients"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "clients", "php"), filepath.Join(dir, "clients", "php")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "endpoint.php"), []byte(docsEndpoint(t)), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := startPHP(t, php, dir)
	url := "http://" + addr + "/"

	forged, err := http.Post(url, "application/json", strings.NewReader(`{"body":{"amount":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	forged.Body.Close()
	if forged.StatusCode != 401 {
		t.Fatalf("an unsigned request: %d, want the endpoint's 401", forged.StatusCode)
	}

	settings := job.TopicConfig{job.DeliverTo: url, job.DeliverSecret: docsSecret, "keep_completed": "3600", "max_reserved": "4"}
	tweak := func(c *config.Config) {
		c.WebhookAllowHosts, c.WebhookScan = []string{"127.0.0.1"}, 20*time.Millisecond
		c.Topics = map[string]job.TopicConfig{"hooks": settings}
	}
	a := brokertest.Fresh(t, tweak)
	brokertest.Start(t, brokertest.Redis(), tweak)
	const n = 40
	for i := range n {
		push(t, a, "hooks", fmt.Sprintf(`{"amount":%d},"id":"order-%d"`, i, i))
	}
	for i := range n {
		id := fmt.Sprintf("order-%d", i)
		brokertest.Eventually(t, id+" completed", func() bool {
			_, j := jobOf(t, a, id)
			return j["state"] == "completed"
		})
		_, j := jobOf(t, a, id)
		if fmt.Sprint(j["result"]) != fmt.Sprintf("map[charged:%d]", i) {
			t.Fatalf("%s: result %v", id, j["result"])
		}
	}
}

// startPHP serves dir with php -S on a free port of 127.0.0.1.
func startPHP(t *testing.T, php, dir string) string {
	t.Helper()
	for try := 0; ; try++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		cmd := exec.Command(php, "-S", addr, "endpoint.php")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "PHP_CLI_SERVER_WORKERS=4") // requests at once, as PHP-FPM's pool
		// Its own process group, killed whole: the workers are its
		// children, and would outlive a kill of the server alone.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if c, err := net.Dial("tcp", addr); err == nil {
				c.Close()
				return addr
			}
		}
		if try == 2 {
			t.Fatalf("php -S %s did not start", addr)
		}
	}
}

// pythonEndpoint is a receiver on Python's http.server, checking each
// signature with the Python client: it fails the jobs whose number is a
// multiple of 3 (a third of them) and acks the rest, counting the
// requests it has open at once; GET answers its counts.
const pythonEndpoint = `
import json, sys, threading, time
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
from gmq_client import verify_webhook, WebhookVerificationError

secret = sys.argv[1]
lock = threading.Lock()
state = {"open": 0, "most": 0, "requests": 0, "forged": 0}

class Endpoint(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        try:
            verify_webhook(secret, self.headers, body)
        except WebhookVerificationError:
            with lock:
                state["forged"] += 1
            self.send_response(401)
            self.end_headers()
            return
        job = json.loads(body)
        with lock:
            state["open"] += 1
            state["requests"] += 1
            state["most"] = max(state["most"], state["open"])
        time.sleep(0.01)
        # Closed before the answer is sent: once it is, the broker may
        # open the next request before this thread runs again.
        with lock:
            state["open"] -= 1
        if job["internal_id"] % 3 == 0:
            self.send_response(500)
            self.end_headers()
            self.wfile.write(b"a third fail")
        else:
            out = json.dumps({"n": job["body"]["n"]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

    def do_GET(self):
        with lock:
            out = json.dumps(state).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):
        pass

server = ThreadingHTTPServer(("127.0.0.1", 0), Endpoint)
print(server.server_address[1], flush=True)
server.serve_forever()
`

// TestDeliverToPython: two brokers deliver 90 jobs to a Python endpoint
// that fails a third of them: every job ends acked or dead (the third,
// after max_attempts), none twice, and the endpoint never has more
// requests open than the topic's max_reserved.
func TestDeliverToPython(t *testing.T) {
	python := brokertest.Tool(t, "python3", "GMQ_REQUIRE_PYTHON")
	script := filepath.Join(t.TempDir(), "endpoint.py")
	if err := os.WriteFile(script, []byte(pythonEndpoint), 0o644); err != nil {
		t.Fatal(err)
	}
	root, _ := filepath.Abs("..")
	cmd := exec.Command(python, script, secret)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+filepath.Join(root, "clients", "python"))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the Python endpoint did not say its port: %v", err)
	}
	url := "http://127.0.0.1:" + strings.TrimSpace(line) + "/"

	const maxReserved = 3
	settings := job.TopicConfig{job.DeliverTo: url, job.DeliverSecret: secret, "keep_completed": "3600",
		"max_reserved": strconv.Itoa(maxReserved), "max_attempts": "2", "backoff": "fixed", "backoff_base": "0"}
	tweak := func(c *config.Config) {
		c.WebhookAllowHosts, c.WebhookScan = []string{"127.0.0.1"}, 20*time.Millisecond
		c.Topics = map[string]job.TopicConfig{"hooks": settings}
	}
	a := brokertest.Fresh(t, tweak)
	b := brokertest.Start(t, brokertest.Redis(), tweak)
	const n = 90
	ids := make([]string, n)
	for i := range n {
		ids[i] = push(t, a, "hooks", fmt.Sprintf(`{"n":%d}`, i))
	}
	brokertest.Eventually(t, "every job acked or dead", func() bool {
		_, s := brokertest.Call(t, "GET", a.URL+"/api/v1/topics/hooks", "")
		return s["completed"].(float64)+s["dead"].(float64) == n
	})
	for _, id := range ids {
		num, _ := strconv.Atoi(id)
		_, j := jobOf(t, a, id)
		want := "completed"
		if num%3 == 0 {
			want = "dead"
		}
		if j["state"] != want {
			t.Fatalf("job %s is %v, want %s: %v", id, j["state"], want, j)
		}
		if want == "dead" && (j["failures"] != 2.0 || !strings.Contains(fmt.Sprint(j["last_error"]), "HTTP 500: a third fail")) {
			t.Fatalf("job %s died so: %v", id, j)
		}
		if want == "completed" && (j["attempt"] != 1.0 || fmt.Sprint(j["result"]) != fmt.Sprintf("map[n:%v]", j["body"].(map[string]any)["n"])) {
			t.Fatalf("job %s completed so: %v", id, j)
		}
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	var state map[string]float64
	json.NewDecoder(resp.Body).Decode(&state)
	resp.Body.Close()
	dead := 0
	for _, id := range ids {
		if num, _ := strconv.Atoi(id); num%3 == 0 {
			dead++
		}
	}
	if state["most"] > maxReserved || state["forged"] != 0 || state["requests"] != float64(n+dead) {
		t.Fatalf("the endpoint saw %v: want at most %d open, none forged, %d requests", state, maxReserved, n+dead)
	}
	sa, _ := a.Broker.Deliverer().Stats("hooks")
	sb, _ := b.Broker.Deliverer().Stats("hooks")
	if sa.Sent+sb.Sent != int64(n+dead) || sa.Failed+sb.Failed != int64(2*dead) {
		t.Fatalf("the brokers counted %+v and %+v", sa, sb)
	}
}
