// Package python_test runs the Python client (this folder, the package
// gmq_client) against a live broker. It installs the package once into a
// fresh venv, as a user would but offline (pip install --no-index
// --no-build-isolation), and runs its scripts in testdata/ and its examples
// with the venv's python: what they import is the installed package, never
// this folder's sources.
package python_test

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
	"github.com/gmq/gmq/internal/cutproxy"
)

func TestMain(m *testing.M) { brokertest.Main(m) }

// TestPython installs the package once and runs every case with it. The
// cases share the package's Redis (each flushes it), so they run one by one.
func TestPython(t *testing.T) {
	py := install(t)
	cases := []struct {
		name string
		run  func(t *testing.T, py string)
	}{
		{"LongPollPastRequestTimeout", testLongPollPastRequestTimeout},
		{"Scripts", testScripts},
		{"Examples", testExamples},
		{"Token", testToken},
		{"RetriesOn503", testRetriesOn503},
		{"Webhook", testWebhook},
		{"WorkerStub", testWorkerStub},
		{"WorkerConcurrency", testWorkerConcurrency},
		{"WorkerFailsOnException", testWorkerFailsOnException},
		{"WorkerFailsUndecodable", testWorkerFailsUndecodable},
		{"WorkerTimeout", testWorkerTimeout},
		{"WorkerJobTimeout", testWorkerJobTimeout},
		{"Events", testEvents},
		{"WorkerTouchesPastTTR", testWorkerTouchesPastTTR},
		{"WorkerStopsOnSIGTERM", testWorkerStopsOnSIGTERM},
		{"WorkerKilledJobComesBack", testWorkerKilledJobComesBack},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.run(t, py) })
	}
}

// install makes a venv in a temporary folder with the python3 on PATH,
// installs this folder into it with the venv's own pip, offline, and
// returns the venv's python. The install must leave nothing in this folder
// (no build/, egg-info or __pycache__).
func install(t *testing.T) string {
	t.Helper()
	sys := brokertest.Tool(t, "python3", "GMQ_REQUIRE_PYTHON")
	venv := filepath.Join(t.TempDir(), "venv")
	command(t, sys, "-m", "venv", venv)
	before := files(t)
	command(t, filepath.Join(venv, "bin", "pip"), "install", "--quiet", "--no-index", "--no-build-isolation", ".")
	if after := files(t); after != before {
		t.Errorf("the install left files in clients/python:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	py := filepath.Join(venv, "bin", "python")
	// From another folder, so that only the installed package can be found.
	cmd := pythonCommand(py, "-c", "import gmq_client, os; d = os.path.dirname(gmq_client.__file__); "+
		"print(d); assert os.path.exists(os.path.join(d, 'py.typed'))")
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), venv) {
		t.Fatalf("gmq_client is not the venv's (%v):\n%s", err, out)
	}
	return py
}

// pythonCommand is exec.Command for python, pip or a venv's program, with
// no bytecode written beside the sources (a script of testdata/ importing
// stub.py, pip importing build_backend/) and no question to PyPI.
func pythonCommand(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1", "PIP_DISABLE_PIP_VERSION_CHECK=1", "PIP_NO_INPUT=1")
	return cmd
}

// command runs a program in this folder and fails the test if it fails.
func command(t *testing.T, name string, args ...string) {
	t.Helper()
	cmd := pythonCommand(name, args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// files lists this folder's files, one a line.
func files(t *testing.T) string {
	t.Helper()
	var list strings.Builder
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err == nil {
			list.WriteString(path + "\n")
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return list.String()
}

// run runs a script of testdata/ that prints "ok" when all went well.
func run(t *testing.T, py string, args ...string) {
	t.Helper()
	out, err := pythonCommand(py, args...).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("%v\n%s", err, out)
	}
}

// Every waiting call (pop, batch pop, ack then pop, batch ack then pop)
// waits its whole timeout and comes back empty, against a broker whose
// request_timeout is a third of the wait (issue 20: every long poll of
// request_timeout or more answered 503).
func testLongPollPastRequestTimeout(t *testing.T, py string) {
	const requestTimeout, wait = 400 * time.Millisecond, 1200 * time.Millisecond
	b := brokertest.Fresh(t, func(c *config.Config) { c.RequestTimeout = requestTimeout })
	run(t, py, "testdata/longpoll.py", b.URL, "py", strconv.FormatFloat(wait.Seconds(), 'f', -1, 64))
}

// The scripts of testdata/, each run against a fresh broker; each says what
// it checks in its own words, and exits non-zero on the first failure.
func testScripts(t *testing.T, py string) {
	for _, c := range []struct{ name, script, topic string }{
		{"Batches", "batch.py", "batch-py"}, // batch pop and batch ack
		// delivery tokens: every call on a popped job's delivery carries its
		// token (the worker's too), so a late one reaches no new job pushed
		// again with the same id
		{"Tokens", "delivery_token.py", "token-py"},
		// JSON bodies: a dict or list pushed (one, a batch, an update, a
		// schedule's job) pops back as a dict or list; a string stays a string
		{"JSONBodies", "json_body.py", "json-py"},
		{"Unique", "unique.py", "unique-py"}, // reject (held_by), replace, debounce, bad input
		{"Groups", "groups.py", "groups-py"}, // pushed (one, a batch), popped in turn, bad ones
		// cron schedules: one every second pushes its job; paused, fired now,
		// refused under overlap skip, a field reset, deleted (404s), bad ones
		// (400); and a unique key released
		{"Schedules", "schedules.py", "schedules-py"},
		// completed jobs: a worker's handler returns the result its ack
		// carries, read back with get_job; the acks with a result (ack,
		// ack_and_pop, ack_many); a push's keep_completed
		{"Outcomes", "outcomes.py", "outcomes-py"},
		// follow-ups: an ack with push answers their ids, each then popped
		// under its id (ack, ack_many); a bad one is a 400 naming it, the
		// job still reserved; a worker's handler returning Done acks with
		// them, and one whose follow-ups are refused is failed
		{"FollowUps", "followups.py", "followups-py"},
		// progress and a log read back; a worker's handler stopped when its
		// job is cancelled (by its touch, by its own progress), neither acked
		// nor failed; a late ack's 410 logged; cancel of a waiting job;
		// wait_end answered by a worker's ack; push_and_wait
		{"Cancel", "cancel.py", "cancel-py"},
		// workflows: a job pushed with after waits until its dependencies
		// are acked, with their results; then and on_dead popped after an
		// ack, after a death; a batch's callbacks once with its summary, an
		// open batch added to and closed, a cancelled one; 400s, 404s, 409s
		{"Workflows", "workflows.py", "workflows-py"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := brokertest.Fresh(t, nil)
			run(t, py, "testdata/"+c.script, b.URL, c.topic)
		})
	}
}

// The events generator (testdata/events.py): a job's events with its
// result, resumed after the proxy between it and the broker cuts its
// connection, without missing or repeating one; lost; types; a 400.
func testEvents(t *testing.T, py string) {
	b := brokertest.Fresh(t, nil)
	proxy := cutproxy.Start(t, b.URL)
	const topic = "events-py"
	run(t, py, "testdata/events.py", b.URL, topic, proxy.URL, strconv.Itoa(b.Pool.EventsBucket(topic)))
	if ids := proxy.LastEventIDs(); len(ids) != 2 || ids[0] != "" || ids[1] == "" {
		t.Fatalf("the stream connected with Last-Event-ID %q; want none, then the reserved event's", ids)
	}
}

// The producer, worker, unique, schedule, report, events and workflow examples run as the README shows them:
// the README holds each file whole. They run from a copy in another
// folder, so that they import the installed package.
func testExamples(t *testing.T, py string) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, name := range []string{"producer.py", "consumer.py", "unique.py", "schedule.py", "report.py", "events.py", "workflow.py"} {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(readme, []byte("```python\n"+string(src)+"```\n")) {
			t.Errorf("README.md does not show %s as it is", name)
		}
		if err := os.WriteFile(filepath.Join(dir, name), src, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b := brokertest.Fresh(t, nil)
	example := func(args ...string) string {
		cmd := pythonCommand(py, args...)
		cmd.Dir = dir
		cmd.Env = append(cmd.Env, "GMQ_URL="+b.URL)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", args[0], err, out)
		}
		return string(out)
	}
	if out := example("producer.py", "--topic", "py-ex", "-n", "6"); strings.Count(out, "pushed ") != 6 {
		t.Fatalf("producer:\n%s", out)
	}
	if out := example("consumer.py", "--url", b.URL, "--topic", "py-ex", "-n", "6"); strings.Count(out, "done ") != 6 {
		t.Fatalf("consumer:\n%s", out)
	}
	if n := count(t, b, "py-ex"); n != 0 {
		t.Errorf("%d jobs left after the consumer", n)
	}
	first, second := example("unique.py"), example("unique.py")
	digest := regexp.MustCompile(`^queued the digest (\S+)\nqueued the signup mail\n$`).FindStringSubmatch(first)
	if digest == nil {
		t.Fatalf("unique.py, first run:\n%s", first)
	}
	if !regexp.MustCompile(`^updated the waiting digest ` + regexp.QuoteMeta(digest[1]) + `\nthe signup mail is job \S+ already\n$`).MatchString(second) {
		t.Fatalf("unique.py, second run:\n%s", second)
	}
	// schedule.py twice: the report fired, then found waiting (a refused
	// fire now counts as a skip).
	first, second = example("schedule.py"), example("schedule.py")
	fired := regexp.MustCompile(`^daily-report fires next at \d{4}-\d\d-\d\dT0[78]:00:00Z\nfired daily-report now: job (\S+)\n` +
		`daily-report: '0 9 \* \* \*' in Europe/Berlin, 1 fires, 0 skips, last job (\S+)\n$`).FindStringSubmatch(first)
	if fired == nil || fired[1] != fired[2] {
		t.Fatalf("schedule.py, first run:\n%s", first)
	}
	if !regexp.MustCompile(`^daily-report fires next at \S+\nthe last report still waits\n` +
		`daily-report: '0 9 \* \* \*' in Europe/Berlin, 1 fires, 1 skips, last job ` + fired[1] + `\n$`).MatchString(second) {
		t.Fatalf("schedule.py, second run:\n%s", second)
	}
	// report.py: its job made by a worker, read back completed with its result.
	report := example("report.py")
	made := regexp.MustCompile(`^job (\d+) completed at \S+Z: /r/(\d+)\.pdf, 7 pages\n$`).FindStringSubmatch(report)
	if made == nil || made[1] != made[2] {
		t.Fatalf("report.py:\n%s", report)
	}
	// workflow.py: the dependent waited, then ran with its dependencies'
	// results; its then and the batch's on_complete came with theirs.
	out := example("workflow.py")
	flow := regexp.MustCompile(`^load is waiting\nday 5: loaded 120 rows\n` +
		`batch (\d+): done, 2 of 2 parts completed, meta \{'day': 5\}\nbatch (\d+) is done\n$`).FindStringSubmatch(out)
	if flow == nil || flow[1] != flow[2] {
		t.Fatalf("workflow.py:\n%s", out)
	}
	exampleEvents(t, py, b, dir)
}

// exampleEvents runs events.py (in dir) with --count 1 on a topic with
// events = true: it says it watches, prints a job's completion with its
// result when the job is acked, and ends.
func exampleEvents(t *testing.T, py string, b *brokertest.Broker, dir string) {
	brokertest.MustCall(t, 200, "PUT", b.URL+"/api/v1/topics/py-events/config", `{"events": true}`)
	cmd := pythonCommand(py, "events.py", "--topic", "py-events", "--count", "1")
	cmd.Dir = dir
	cmd.Env = append(cmd.Env, "GMQ_URL="+b.URL)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	lines := make(chan string, 16)
	go func() { // ends with the script's stdout
		defer close(lines)
		for s := bufio.NewScanner(out); s.Scan(); {
			lines <- s.Text()
		}
	}()
	await := func(want string) {
		t.Helper()
		select {
		case line := <-lines:
			if line != want {
				t.Fatalf("events.py printed %q; want %q", line, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("events.py did not print %q within 10 s:\n%s", want, stderr.String())
		}
	}
	await("watching py-events")
	brokertest.MustCall(t, 201, "POST", b.URL+"/api/v1/jobs", `{"id":"export-9","topic":"py-events","body":"x"}`)
	brokertest.MustCall(t, 200, "GET", b.URL+"/api/v1/pop?topic=py-events", "")
	brokertest.MustCall(t, 200, "POST", b.URL+"/api/v1/jobs/export-9/ack", `{"result":{"url":"/r/9.pdf"}}`)
	await("job export-9 completed: {'url': '/r/9.pdf'}")
	for range lines {
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("events.py: %v\n%s", err, stderr.String())
	}
}

// A broker with a token answers 401 without it, and every call with it.
func testToken(t *testing.T, py string) {
	b := brokertest.Fresh(t, func(c *config.Config) { c.Token = "s3cret" })
	run(t, py, "testdata/auth.py", b.URL, "py-token", "s3cret")
}

// Retries on 503, against a stub of the broker inside the script.
func testRetriesOn503(t *testing.T, py string) {
	run(t, py, "testdata/retry.py")
}

// Webhook signatures (HTTP push delivery), no broker: verify_webhook on the
// Standard Webhooks spec's vector, rotation, the tolerance's bounds,
// tampering, bad secrets and headers; and the README's receiver, served and
// sent signed deliveries (testdata/webhook.py).
func testWebhook(t *testing.T, py string) {
	run(t, py, "testdata/webhook.py")
}

// count is how many jobs topic holds, in any state.
func count(t *testing.T, b *brokertest.Broker, topic string) int {
	t.Helper()
	out := brokertest.MustCall(t, 200, "GET", b.URL+"/api/v1/topics/"+topic, "")
	total := 0
	for _, state := range []string{"ready", "delayed", "reserved", "buried", "dead"} {
		if n, ok := out[state].(float64); ok {
			total += int(n)
		}
	}
	return total
}
