package python_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/job"
)

// worker is testdata/worker.py running: its output lines as they come.
type worker struct {
	cmd    *exec.Cmd
	lines  chan string // stdout, closed at its end
	stderr *lockedBuffer
	mu     sync.Mutex
	seen   []string // every line taken from lines so far
}

// startWorker runs testdata/worker.py on topic of b with options; it is
// killed when the test ends, if still running.
func startWorker(t *testing.T, py string, b *brokertest.Broker, topic string, options ...string) *worker {
	t.Helper()
	cmd := pythonCommand(py, append([]string{"testdata/worker.py", b.URL, topic}, options...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	w := &worker{cmd: cmd, lines: make(chan string, 1000), stderr: new(lockedBuffer)}
	cmd.Stderr = w.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(w.lines)
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			w.lines <- s.Text()
		}
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		t.Logf("worker.py %s stderr:\n%s", strings.Join(options, " "), w.stderr)
	})
	return w
}

// lockedBuffer is the worker's stderr: exec writes it from its own
// goroutine while a test reads it (awaitLog).
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// awaitLog waits up to within for the worker's log (stderr) to hold text.
func (w *worker) awaitLog(t *testing.T, text string, within time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(within); !strings.Contains(w.stderr.String(), text); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the worker never logged %q:\n%s", text, w.stderr)
		}
	}
}

// await waits up to within for a line starting with prefix, and returns it.
func (w *worker) await(t *testing.T, prefix string, within time.Duration) string {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case line, ok := <-w.lines:
			if !ok {
				t.Fatalf("worker.py ended before %q; it printed:\n%s", prefix, w.output())
			}
			w.mu.Lock()
			w.seen = append(w.seen, line)
			w.mu.Unlock()
			if strings.HasPrefix(line, prefix) {
				return line
			}
		case <-deadline:
			t.Fatalf("no %q from worker.py within %v; it printed:\n%s", prefix, within, w.output())
		}
	}
}

// wait waits up to within for the process to end, and returns its output.
func (w *worker) wait(t *testing.T, within time.Duration) []string {
	t.Helper()
	w.await(t, "stopped", within)
	done := make(chan error, 1)
	go func() { done <- w.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("worker.py: %v; it printed:\n%s", err, w.output())
		}
	case <-time.After(within):
		t.Fatalf("worker.py said it stopped but did not end within %v", within)
	}
	return w.taken()
}

func (w *worker) taken() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.seen...)
}

func (w *worker) output() string { return strings.Join(w.taken(), "\n") }

// signal sends sig to the worker's process.
func (w *worker) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := w.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// push stores a job through the HTTP API (not the client under test) and
// returns its id; fields is the rest of its JSON object.
func push(t *testing.T, b *brokertest.Broker, topic, body, fields string) string {
	t.Helper()
	job := fmt.Sprintf(`{"topic":%q,"body":%q%s}`, topic, body, fields)
	return brokertest.MustCall(t, 201, "POST", b.URL+"/api/v1/jobs", job)["id"].(string)
}

// getJob is GET /api/v1/jobs/{id}: its status and the job.
func getJob(t *testing.T, b *brokertest.Broker, id string) (int, map[string]any) {
	t.Helper()
	return brokertest.Call(t, "GET", b.URL+"/api/v1/jobs/"+id, "")
}

// startedLines are the "started ID ATTEMPT" lines of out.
func startedLines(out []string) []string {
	var started []string
	for _, line := range out {
		if strings.HasPrefix(line, "started ") {
			started = append(started, line)
		}
	}
	return started
}

// What a live broker cannot show on cue, against a stub inside the script:
// a stop during a poll that then brings a job, a wrong token.
func testWorkerStub(t *testing.T, py string) {
	run(t, py, "testdata/worker_stub.py")
}

// Four threads work on 20 jobs, the first four at once (they wait for
// each other), and ack every one exactly once.
func testWorkerConcurrency(t *testing.T, py string) {
	const jobs, concurrency = 20, 4
	b := brokertest.Fresh(t, nil)
	want := map[string]bool{}
	for i := range jobs {
		want[push(t, b, "py-many", fmt.Sprint(i), "")] = true
	}
	w := startWorker(t, py, b, "py-many", "--concurrency", fmt.Sprint(concurrency), "--together", fmt.Sprint(concurrency),
		"--sleep", "0.05", "--expect", fmt.Sprint(jobs))
	out := w.wait(t, 20*time.Second)
	started := startedLines(out)
	got := map[string]bool{}
	for _, line := range started {
		var id string
		var attempt int
		if _, err := fmt.Sscanf(line, "started %s %d", &id, &attempt); err != nil || attempt != 1 || !want[id] || got[id] {
			t.Errorf("unexpected %q (%v)", line, err)
		}
		got[id] = true
	}
	if len(got) != jobs {
		t.Errorf("%d jobs run, want %d:\n%s", len(got), jobs, strings.Join(out, "\n"))
	}
	if n := count(t, b, "py-many"); n != 0 {
		t.Errorf("%d jobs left: not all were acked", n)
	}
}

// A handler's exception fails the job with "Type: message", which GET
// /api/v1/jobs/{id} shows as last_error.
func testWorkerFailsOnException(t *testing.T, py string) {
	b := brokertest.Fresh(t, nil)
	id := push(t, b, "py-boom", "x", `,"id":"boom-1"`)
	w := startWorker(t, py, b, "py-boom", "--fail", "no such mailbox", "--expect", "1")
	w.wait(t, 10*time.Second)
	code, job := getJob(t, b, id)
	if code != 200 || job["last_error"] != "ValueError: no such mailbox" || job["failures"] != 1.0 {
		t.Fatalf("after the exception: %d %v", code, job)
	}
}

// A handler past the worker's timeout has its stop event set, and its job
// is failed with that reason whatever the handler returns.
func testWorkerTimeout(t *testing.T, py string) {
	b := brokertest.Fresh(t, nil)
	id := push(t, b, "py-late", "x", `,"id":"late-1"`)
	w := startWorker(t, py, b, "py-late", "--timeout", "0.2", "--until-stopped", "--expect", "1")
	w.wait(t, 10*time.Second)
	code, job := getJob(t, b, id)
	if code != 200 || job["last_error"] != "gmq: the handler ran out of time after 0.2 s" || job["failures"] != 1.0 {
		t.Fatalf("after the timeout: %d %v", code, job)
	}
}

// A job pushed with a timeout of its own (by the client, through
// worker.py's --push) shorter than the worker's has its handler's stop
// event set at the job's, and is failed with that reason.
func testWorkerJobTimeout(t *testing.T, py string) {
	b := brokertest.Fresh(t, nil)
	w := startWorker(t, py, b, "py-own", "--timeout", "30", "--push-timeout", "0.2", "--until-stopped", "--expect", "1")
	id := strings.TrimPrefix(w.await(t, "pushed ", 10*time.Second), "pushed ")
	w.wait(t, 10*time.Second)
	code, job := getJob(t, b, id)
	if code != 200 || job["last_error"] != "gmq: the handler ran out of time after 0.2 s" || job["failures"] != 1.0 ||
		job["timeout"] != 0.2 {
		t.Fatalf("after the job's timeout: %d %v", code, job)
	}
}

// A handler that runs past its job's TTR (5 s for a TTR of 4 s) keeps the
// job, touched every 2 s: a second thread polling all along never gets it,
// and the ack of its one delivery goes through. (A TTR of 2 s left a touch
// 1 s to land, which a loaded make test can overtake.)
func testWorkerTouchesPastTTR(t *testing.T, py string) {
	b := brokertest.Fresh(t, nil)
	id := push(t, b, "py-slow", "slow", `,"TTR":4`)
	w := startWorker(t, py, b, "py-slow", "--concurrency", "2", "--sleep", "5", "--expect", "1")
	out := w.wait(t, 30*time.Second)
	if started := startedLines(out); len(started) != 1 || started[0] != "started "+id+" 1" {
		t.Fatalf("the job was delivered %d times:\n%s", len(started), strings.Join(out, "\n"))
	}
	if code, job := getJob(t, b, id); code != 404 {
		t.Fatalf("the job was not acked: %d %v\n%s", code, job, w.stderr)
	}
}

// SIGTERM while a job runs: no more pops, the job finishes and is acked,
// and the process exits 0. A job pushed after the signal is not run: the
// other thread's poll in flight brings it and releases it at once (nearly
// always: testWorkerStub shows it on cue), or no poll takes it.
func testWorkerStopsOnSIGTERM(t *testing.T, py string) {
	b := brokertest.Fresh(t, nil)
	id := push(t, b, "py-term", "long", "")
	w := startWorker(t, py, b, "py-term", "--concurrency", "2", "--sleep", "2", "--poll", "1")
	w.await(t, "started "+id, 10*time.Second)
	w.signal(t, syscall.SIGTERM)
	// A signal sent is not yet a signal handled (Python runs its handler in
	// the main thread when it next can): the job pushed before the worker
	// says so was once run, on a loaded make test.
	w.awaitLog(t, "SIGTERM: no more pops", 10*time.Second)
	late := push(t, b, "py-term", "late", "")
	start := time.Now()
	out := w.wait(t, 10*time.Second)
	if took := time.Since(start); took > 4*time.Second {
		t.Errorf("stopping took %v: more than the job's 2 s and a 1 s poll", took)
	}
	if !strings.Contains(strings.Join(out, "\n"), "finished "+id) {
		t.Errorf("the job in hand did not finish:\n%s", strings.Join(out, "\n"))
	}
	if code, job := getJob(t, b, id); code != 404 {
		t.Errorf("the job in hand was not acked: %d %v", code, job)
	}
	if started := startedLines(out); len(started) != 1 {
		t.Errorf("a job was run after the signal:\n%s", strings.Join(out, "\n"))
	}
	code, job := getJob(t, b, late)
	if code != 200 || job["state"] != "ready" {
		t.Errorf("the job pushed after the signal: %d %v, want it ready", code, job)
	}
	t.Logf("the job pushed after the signal was released %v times", job["releases"])
}

// A worker killed mid-job (SIGKILL: nothing to finish with) loses nothing:
// once the job's TTR (1 s) runs out, a pop gets it again, as attempt 2.
func testWorkerKilledJobComesBack(t *testing.T, py string) {
	b := brokertest.Fresh(t, nil)
	id := push(t, b, "py-kill", "doomed", `,"TTR":1`)
	w := startWorker(t, py, b, "py-kill", "--sleep", "60")
	w.await(t, "started "+id+" 1", 10*time.Second)
	w.signal(t, syscall.SIGKILL)
	var exit *exec.ExitError
	if err := w.cmd.Wait(); !errors.As(err, &exit) {
		t.Fatalf("worker.py after SIGKILL: %v", err)
	}
	start := time.Now()
	job := brokertest.MustCall(t, 200, "POST", b.URL+"/api/v1/pop", `{"topics":["py-kill"],"timeout":5}`)
	if job["id"] != id || job["attempt"] != 2.0 {
		t.Fatalf("popped %v, want %s on attempt 2", job, id)
	}
	t.Logf("the job came back %v after the kill", time.Since(start).Round(time.Millisecond))
}

// Jobs whose body json.loads cannot give back as sent, as a broker before
// issue 49's rule stored them (written here through the dispatcher, which
// stores what it is given): a lone surrogate escape, which Python keeps as a
// str no UTF-8 can write, a number past a double, read as inf, and arrays
// nested 3,000 deep, on which json.loads raises RecursionError (a webhook's
// answer kept as a with_result follow-up's body before issue 49). The
// worker fails each with the reason, without running the handler on it (a
// handler met them as text it could not print, or a wrong number), and
// runs the job after them.
func testWorkerFailsUndecodable(t *testing.T, py string) {
	b := brokertest.Fresh(t, nil)
	one := 1
	var bad []string
	for _, body := range []string{`{"s":"\ud800"}`, `[1e400]`, strings.Repeat("[", 3000) + strings.Repeat("]", 3000)} {
		p, err := b.Dispatcher.Push(context.Background(), job.Spec{Topic: "py-undecodable", Body: body, BodyJSON: true,
			TTR: 300 * time.Second, Priority: 1, Retry: &job.RetryPolicy{MaxAttempts: &one}})
		if err != nil {
			t.Fatal(err)
		}
		bad = append(bad, strconv.FormatUint(p.ID, 10))
	}
	good := push(t, b, "py-undecodable", "fine", `,"priority":2`)
	w := startWorker(t, py, b, "py-undecodable", "--expect", "1")
	out := w.wait(t, 20*time.Second)
	if started := startedLines(out); len(started) != 1 || !strings.HasPrefix(started[0], "started "+good+" ") {
		t.Errorf("the handler ran on %v, want the decodable job %s alone", started, good)
	}
	for i, id := range bad {
		code, j := getJobUseNumber(t, b, id) // Go's decoder fails on 1e400 as a float64
		want := []string{"holds a lone UTF-16 surrogate", "holds a number past a double", "nests objects and arrays too deep"}[i]
		if reason, _ := j["last_error"].(string); code != 200 || j["state"] != "dead" || !strings.Contains(reason, "cannot decode the job: its body "+want) {
			t.Errorf("job %s: %d %v, want it dead, failed saying it holds %s", id, code, j, want)
		}
	}
}

// getJobUseNumber is getJob with the numbers read as json.Number.
func getJobUseNumber(t *testing.T, b *brokertest.Broker, id string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Get(b.URL + "/api/v1/jobs/" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	dec.UseNumber()
	var j map[string]any
	if err := dec.Decode(&j); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, j
}
