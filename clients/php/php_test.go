// Package php_test runs the PHP client (this folder, the Composer package
// gmq/client) against a live broker: it installs the package once into a
// temporary Composer project, as the README says, and runs the scripts of
// testdata/ and the README's examples there, with Debian's php and composer.
package php_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/client"
	"github.com/gmq/gmq/config"
	"github.com/gmq/gmq/internal/cutproxy"
	"github.com/gmq/gmq/internal/redistest"
)

var (
	// redis is the package's redis-server, and scratch the folder every
	// test's files go under (the Composer project among them): TestMain
	// removes both, where brokertest.Main could not remove the second.
	redis   *redistest.Server
	scratch string
)

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "gmq-php")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	scratch = dir
	if err := os.Mkdir(filepath.Join(dir, "redis"), 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	redis, err = redistest.StartIn(filepath.Join(dir, "redis"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer redis.Stop()
	return m.Run()
}

// fresh empties the package's Redis and starts a broker over it (brokertest.Fresh).
func fresh(t *testing.T, tweak func(*config.Config)) *brokertest.Broker {
	t.Helper()
	redis.Flush(t)
	return brokertest.Start(t, redis, tweak)
}

func php(t *testing.T) string { return brokertest.Tool(t, "php", "GMQ_REQUIRE_PHP") }

var (
	installOnce sync.Once
	installErr  error
)

// project returns the Composer project that requires this package, made
// on first use: the README's composer.json, with its path repository
// pointed at this folder and Packagist turned off (no network here), then
// `composer install` with a COMPOSER_HOME of its own.
func project(t *testing.T) string {
	t.Helper()
	php(t)
	composer := brokertest.Tool(t, "composer", "GMQ_REQUIRE_COMPOSER")
	dir := filepath.Join(scratch, "project")
	installOnce.Do(func() { installErr = install(composer, dir) })
	if installErr != nil {
		t.Fatal(installErr)
	}
	return dir
}

func install(composer, dir string) error {
	here, err := os.Getwd()
	if err != nil {
		return err
	}
	manifest, err := offline(readmeBlock("composer.json"), here)
	if err != nil {
		return fmt.Errorf("README's composer.json: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "composer.json"), manifest, 0o644); err != nil {
		return err
	}
	cmd := exec.Command(composer, "install", "--no-interaction", "--no-progress")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "COMPOSER_HOME="+filepath.Join(scratch, "composer-home"),
		"COMPOSER_CACHE_DIR="+filepath.Join(scratch, "composer-cache"), "COMPOSER_DISABLE_NETWORK=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("composer install: %w\n%s", err, out)
	}
	return nil
}

// offline is the README's composer.json with its path repository's url
// set to dir and Packagist turned off.
func offline(manifest, dir string) ([]byte, error) {
	var m map[string]any
	if err := json.Unmarshal([]byte(manifest), &m); err != nil {
		return nil, err
	}
	repos, _ := m["repositories"].([]any)
	if len(repos) != 1 {
		return nil, fmt.Errorf("want one repository, got %v", m["repositories"])
	}
	path, _ := repos[0].(map[string]any)
	if path["type"] != "path" {
		return nil, fmt.Errorf("want a path repository, got %v", repos[0])
	}
	path["url"] = dir
	m["repositories"] = append(repos, map[string]any{"packagist.org": false})
	return json.MarshalIndent(m, "", "    ")
}

// readmeBlock returns the fenced block that follows "<!-- test: name -->" in
// README.md: what the tests run is what the README shows.
func readmeBlock(name string) string {
	text, err := os.ReadFile("README.md")
	if err != nil {
		panic(err)
	}
	re := regexp.MustCompile("(?s)<!-- test: " + regexp.QuoteMeta(name) + " -->\\s*```[a-z]*\\n(.*?)```")
	m := re.FindSubmatch(text)
	if m == nil {
		panic("README.md has no block " + name)
	}
	return string(m[1])
}

// command is php running a script (testdata's, or the package's as
// installed) in the Composer project, with env added to the environment.
func command(t *testing.T, env []string, args ...string) *exec.Cmd {
	t.Helper()
	dir := project(t)
	for i, arg := range args {
		if strings.HasPrefix(arg, "testdata/") {
			args[i] = filepath.Join(must(os.Getwd()), arg)
		}
	}
	cmd := exec.Command(php(t), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	return cmd
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// run runs a script of testdata/ that prints "ok" when all went well.
func run(t *testing.T, args ...string) {
	t.Helper()
	out, err := command(t, nil, args...).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("%v\n%s", err, out)
	}
}

// Every waiting call (pop, batch pop, ack then pop, batch ack then pop)
// waits its whole timeout and comes back empty, against a broker whose
// request_timeout is a third of the wait (issue 20: every long poll of
// request_timeout or more answered 503).
func TestLongPollPastRequestTimeout(t *testing.T) {
	const requestTimeout, wait = 400 * time.Millisecond, 1200 * time.Millisecond
	b := fresh(t, func(c *config.Config) { c.RequestTimeout = requestTimeout })
	run(t, "testdata/longpoll.php", b.URL, "php", strconv.FormatFloat(wait.Seconds(), 'f', -1, 64))
}

// The scripts of testdata/, each run against a fresh broker; each says what
// it checks in its own words, and exits non-zero on the first failure.
func TestScripts(t *testing.T) {
	for _, c := range []struct{ name, script, topic string }{
		{"Batches", "batch.php", "batch-php"}, // batch pop and batch ack
		// delivery tokens: every call on a popped job's delivery carries its
		// token (the worker's too), so a late one reaches no new job pushed
		// again with the same id
		{"DeliveryTokens", "delivery_token.php", "delivery-token-php"},
		// JSON bodies: an array or object pushed (one, a batch, an update)
		// pops back as arrays; a string stays a string
		{"JSONBodies", "json_body.php", "json-php"},
		{"Unique", "unique.php", "unique-php"}, // reject ($heldBy), replace, debounce, bad input
		{"Groups", "groups.php", "groups-php"}, // pushed (one, a batch), popped in turn, bad ones
		// cron schedules: one every second pushes its job; paused, fired now,
		// refused under overlap skip, a field reset, deleted (404s), bad ones
		// (400); and a unique key released
		{"Schedules", "schedules.php", "schedules-php"},
		// completed jobs: a worker's handler returns the result its ack
		// carries, read back with job(); the acks with a result (ack,
		// ackAndPop, ackMany); a push's keepCompleted
		{"Outcomes", "outcomes.php", "outcomes-php"},
		// follow-ups: an ack with push answers their ids, each then popped
		// under its id (ack, ackMany); a bad one is a 400 naming it, the
		// job still reserved; a worker's handler returning a Gmq\Done acks
		// with them, and one whose follow-ups are refused is failed
		{"FollowUps", "followups.php", "followups-php"},
		// progress and a log read back; cancel (waiting, reserved: a
		// JobCancelled); waitEnd answered by another process's ack;
		// pushAndWait with a worker, and without
		{"Cancel", "cancel.php", "cancel-php"},
		// workflows: after (waiting, released by the ack, its results, a
		// 400, a dead dependency's 409 or 'run'), then and onDead, an ack's
		// push with with_result; batches (on_complete's summary once,
		// on_death, getBatch, an open batch added to and closed, cancelBatch,
		// 404s, 409s, 400s)
		{"Workflows", "workflows.php", "workflows-php"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := fresh(t, nil)
			run(t, "testdata/"+c.script, b.URL, c.topic)
		})
	}
}

// The events generator (testdata/events.php): a job's events with its
// result, resumed after the proxy between it and the broker cuts its
// connection, without missing or repeating one; lost; types; a 400.
func TestEvents(t *testing.T) {
	b := fresh(t, nil)
	proxy := cutproxy.Start(t, b.URL)
	const topic = "events-php"
	run(t, "testdata/events.php", b.URL, topic, proxy.URL, strconv.Itoa(b.Pool.EventsBucket(topic)))
	if ids := proxy.LastEventIDs(); len(ids) != 2 || ids[0] != "" || ids[1] == "" {
		t.Fatalf("the stream connected with Last-Event-ID %q; want none, then the reserved event's", ids)
	}
}

// The producer and consumer examples of this folder run as the README
// shows them, from the installed package.
func TestExamples(t *testing.T) {
	b := fresh(t, nil)
	out, err := command(t, nil, "vendor/gmq/client/producer.php", b.URL, "php-ex", "6").CombinedOutput()
	if err != nil || strings.Count(string(out), "pushed ") != 6 {
		t.Fatalf("producer: %v\n%s", err, out)
	}
	out, err = command(t, nil, "vendor/gmq/client/consumer.php", b.URL, "php-ex", "6", "2").CombinedOutput()
	if err != nil || strings.Count(string(out), "done ") != 6 {
		t.Fatalf("consumer: %v\n%s", err, out)
	}
}

// Code written for GmqClient.php before the package still runs.
func TestLegacyGmqClient(t *testing.T) {
	b := fresh(t, nil)
	run(t, "testdata/legacy.php", b.URL, "legacy")
}

// Against a broker with a token: 401 without it or with a wrong one, and
// every call works with it.
func TestToken(t *testing.T) {
	const token = "s3cret-and-long-enough"
	b := fresh(t, func(c *config.Config) { c.Token = token })
	run(t, "testdata/token.php", b.URL, "token-php", token)
}

// Retries on 503 (Retry-After, the count, the cap) and what a retry's
// answer means (409 on a push with an id, or after a dependency that died,
// 404 on an ack, a batch's stored_ids, an ack-then-pop's "acked"), which
// batches' calls retry (a create's 503 naming its batch is not; an add's
// only with client ids), against a stub that answers what each case needs
// (testdata/stub.php under php -S).
func TestRetriesOn503(t *testing.T) {
	dir := t.TempDir()
	url := stub(t, dir)
	run(t, "testdata/retry.php", url, dir)
}

// stub serves testdata/stub.php with php -S on a free port, its plan and
// log in dir, until the test ends; it returns the base URL.
func stub(t *testing.T, dir string) string {
	t.Helper()
	addr, _ := phpServer(t, "", filepath.Join(must(os.Getwd()), "testdata/stub.php"), "STUB_DIR="+dir)
	return "http://" + addr
}

// phpServer runs php -S with script (from dir, "" this one) on a free
// port of 127.0.0.1, env added to its environment, until the test ends
// (its output logged if the test failed); it returns the address once the
// server listens, and a stop that ends the server and gives its output.
func phpServer(t *testing.T, dir, script string, env ...string) (string, func() string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // php -S takes the port; another process taking it first is unlikely
	cmd := exec.Command(php(t), "-S", addr, script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop := func() string {
		once.Do(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait() // then its log is whole, and no longer written
		})
		return log.String()
	}
	t.Cleanup(func() {
		if out := stop(); t.Failed() {
			t.Logf("php -S:\n%s", out)
		}
	})
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return addr, stop
		}
		if time.Now().After(deadline) {
			t.Fatalf("php -S did not listen on %s", addr)
		}
	}
}

// Webhook signatures (HTTP push delivery), no broker: Gmq\Webhook::verify on
// the Standard Webhooks spec's vector, rotation, the tolerance's bounds,
// tampering, bad secrets and the forms PHP gives headers in
// (testdata/webhook.php). Then the README's endpoint.php, as it is, under
// php -S in the Composer project: a delivery signed as the broker signs it
// (the Go client's SignWebhook, with the second of two rotated secrets) is
// done and answered with its result; a tampered or unsigned one is a 401.
func TestWebhook(t *testing.T) {
	run(t, "testdata/webhook.php")

	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	other := "whsec_" + base64.StdEncoding.EncodeToString([]byte("second-key-of-32-bytes----------"))
	dir := project(t)
	endpoint := filepath.Join(dir, "endpoint.php")
	if err := os.WriteFile(endpoint, []byte(readmeBlock("endpoint.php")), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(endpoint) })
	addr, stop := phpServer(t, dir, "endpoint.php", "GMQ_WEBHOOK_SECRET="+secret+" "+other)
	job := []byte(`{"id":"order-7","internal_id":7,"topic":"orders","body":{"sku":"A1"},"attempt":1,"failures":0}`)
	deliver := func(method string, body []byte, sign bool) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, "http://"+addr+"/jobs", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("webhook-id", "order-7")
		req.Header.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
		req.Header.Set("gmq-topic", "orders")
		if sign {
			sig, err := client.SignWebhook(other, "order-7", now, job)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("webhook-signature", sig)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		answer, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(answer)
	}
	if code, answer := deliver("POST", job, true); code != 200 || answer != `{"done":"order-7"}` {
		t.Fatalf("a signed delivery: %d %s", code, answer)
	}
	tampered := bytes.Replace(job, []byte("A1"), []byte("A2"), 1)
	if code, answer := deliver("POST", tampered, true); code != 401 || !strings.Contains(answer, "no v1 signature matches") {
		t.Fatalf("a tampered delivery: %d %s", code, answer)
	}
	if code, answer := deliver("POST", job, false); code != 401 || !strings.Contains(answer, "no webhook-signature header") {
		t.Fatalf("an unsigned delivery: %d %s", code, answer)
	}
	if code, answer := deliver("GET", nil, true); code != 405 {
		t.Fatalf("a GET: %d %s", code, answer)
	}
	if log := stop(); !strings.Contains(log, `job order-7 of orders, attempt 1: {"sku":"A1"}`) {
		t.Errorf("the endpoint did not log the job's work:\n%s", log)
	}
}
