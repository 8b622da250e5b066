package php_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
	"github.com/gmq/gmq/job"
)

// proc is a PHP process under test, in a process group of its own (its
// forked workers and heartbeats with it): its output lines as they come,
// its stderr in a file, and the whole group killed when the test ends.
type proc struct {
	pid    int
	lines  chan string // stdout, line by line, until every writer is gone
	stderr string      // the file stderr goes to
	exited chan struct{}
	err    error // the exit's, once exited is closed

	mu  sync.Mutex
	all []string // every stdout line so far
}

func start(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	cmd := command(t, env, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Files, not io.Writers: Wait then returns when the process exits, not
	// when the last forked child holding the pipe does.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{lines: make(chan string, 1000), stderr: filepath.Join(t.TempDir(), "stderr"), exited: make(chan struct{})}
	errFile, err := os.Create(p.stderr)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = w, errFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	errFile.Close()
	p.pid = cmd.Process.Pid
	go func() {
		defer close(p.lines)
		defer r.Close()
		for s := bufio.NewScanner(r); s.Scan(); {
			p.mu.Lock()
			p.all = append(p.all, s.Text())
			p.mu.Unlock()
			p.lines <- s.Text()
		}
	}()
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-p.pid, syscall.SIGKILL) // the group: what is left of it
		<-p.exited
		if t.Failed() {
			t.Logf("stdout:\n%s\nstderr:\n%s", strings.Join(p.output(), "\n"), p.errors())
		}
	})
	return p
}

// expect waits up to within for a stdout line matching pattern (the lines
// before it are passed over) and returns its submatches.
func (p *proc) expect(t *testing.T, pattern string, within time.Duration) []string {
	t.Helper()
	re := regexp.MustCompile(pattern)
	timeout := time.After(within)
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				t.Fatalf("no line %q: the output ended", pattern)
			}
			if m := re.FindStringSubmatch(line); m != nil {
				return m
			}
		case <-timeout:
			t.Fatalf("no line %q within %v", pattern, within)
		}
	}
}

// output is every stdout line so far.
func (p *proc) output() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.all...)
}

// count is how many stdout lines so far match pattern.
func (p *proc) count(pattern string) int {
	re := regexp.MustCompile(pattern)
	n := 0
	for _, line := range p.output() {
		if re.MatchString(line) {
			n++
		}
	}
	return n
}

func (p *proc) errors() string {
	data, _ := os.ReadFile(p.stderr)
	return string(data)
}

func (p *proc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(p.pid, sig); err != nil {
		t.Fatal(err)
	}
}

// wait waits up to within for the process to end, and returns how it ended.
func (p *proc) wait(t *testing.T, within time.Duration) error {
	t.Helper()
	select {
	case <-p.exited:
		return p.err
	case <-time.After(within):
		t.Fatalf("the worker did not exit within %v", within)
		return nil
	}
}

// exit is wait that requires an exit status of 0. Its bound is for a
// worker that never stops (the polls here wait 1 s, so one that stops late
// is not caught by it either): 30 s, where 5 s was once overtaken by a
// loaded make test (TestWorkerStopFromAHandler).
func (p *proc) exit(t *testing.T, within time.Duration) {
	t.Helper()
	if err := p.wait(t, within); err != nil {
		t.Fatalf("worker: %v", err)
	}
}

// worker starts testdata/worker.php: see it for the jobs' bodies and the lines it prints.
func worker(t *testing.T, url, topic string, concurrency int, wait float64, maxJobs int) *proc {
	t.Helper()
	return start(t, nil, "testdata/worker.php", url, topic, strconv.Itoa(concurrency),
		strconv.FormatFloat(wait, 'f', -1, 64), strconv.Itoa(maxJobs))
}

// push stores a job and returns its id.
func push(t *testing.T, url, job string) string {
	t.Helper()
	return brokertest.MustCall(t, 201, "POST", url+"/api/v1/jobs", job)["id"].(string)
}

// peek is GET /api/v1/jobs/{id}: its status and the job.
func peek(t *testing.T, url, id string) (int, map[string]any) {
	t.Helper()
	return brokertest.Call(t, "GET", url+"/api/v1/jobs/"+id, "")
}

// requireAcked waits for the job to be gone: the handler prints "done"
// before the worker acks (at once, or later on a loaded machine; only a
// failure waits the minute).
func requireAcked(t *testing.T, url, id string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		code, j := peek(t, url, id)
		if code == 404 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("job %s: status %d %v, want 404 (acked)", id, code, j)
			return
		}
	}
}

// With concurrency 4, four worker processes share the jobs (100 ms each,
// so that all four surely take part on a loaded machine) and ack each.
func TestWorkerConcurrency(t *testing.T) {
	const jobs = 40
	b := fresh(t, nil)
	batch := make([]string, jobs)
	for i := range batch {
		batch[i] = `{"topic":"conc","body":"{\"sleep\":0.1}"}`
	}
	brokertest.MustCall(t, 201, "POST", b.URL+"/api/v1/jobs/batch", `{"jobs":[`+strings.Join(batch, ",")+`]}`)
	w := worker(t, b.URL, "conc", 4, 1, 0)
	done, pids := map[string]bool{}, map[string]int{}
	for range jobs {
		m := w.expect(t, `^done (\S+) (\d+) `, 15*time.Second)
		done[m[1]] = true
		pids[m[2]]++
	}
	if len(done) != jobs || len(pids) != 4 {
		t.Errorf("%d jobs done by processes %v; want %d by 4", len(done), pids, jobs)
	}
	for id := range done {
		requireAcked(t, b.URL, id)
	}
	w.signal(t, syscall.SIGTERM)
	w.exit(t, 30*time.Second)
	if n := w.count(`^start `); n != jobs {
		t.Errorf("%d deliveries, want %d", n, jobs)
	}
}

// A handler's exception fails the job with its class and message: the job
// waits its backoff (a minute here) with last_error set.
func TestWorkerFailsAJobThatThrows(t *testing.T) {
	b := fresh(t, nil)
	id := push(t, b.URL, `{"topic":"throws","body":"{\"throw\":\"no such mailbox\"}","retry":{"backoff":"fixed","base":60}}`)
	w := worker(t, b.URL, "throws", 1, 1, 1) // ends after one job
	w.exit(t, 10*time.Second)
	code, j := peek(t, b.URL, id)
	if code != 200 || j["state"] != "delayed" || j["last_error"] != "RuntimeException: no such mailbox" || j["failures"] != 1.0 {
		t.Errorf("job after the exception: %d %v", code, j)
	}
	if want := "job " + id + " failed: RuntimeException: no such mailbox"; !strings.Contains(w.errors(), want) {
		t.Errorf("the log lacks %q", want)
	}
}

// A handler past the worker's timeout (1 s) is cut short by a
// HandlerTimeout (its sleep of a minute too), and its job failed with
// that reason.
func TestWorkerTimeout(t *testing.T) {
	b := fresh(t, nil)
	id := push(t, b.URL, `{"topic":"late","body":"{\"sleep\":60}","retry":{"backoff":"fixed","base":60}}`)
	w := start(t, []string{"GMQ_WORKER_TIMEOUT=1"}, "testdata/worker.php", b.URL, "late", "1", "1", "1") // ends after one job
	w.exit(t, 30*time.Second)
	code, j := peek(t, b.URL, id)
	if code != 200 || j["last_error"] != "gmq: the handler ran out of time after 1 s" || j["failures"] != 1.0 {
		t.Errorf("job after the timeout: %d %v", code, j)
	}
}

// A job pushed (by the client) with a timeout of its own (1 s) shorter than
// the worker's (30 s) has its handler cut short at the job's, and is failed
// with that reason.
func TestWorkerJobTimeout(t *testing.T) {
	b := fresh(t, nil)
	w := start(t, []string{"GMQ_WORKER_TIMEOUT=30", "GMQ_PUSH_TIMEOUT=1"}, "testdata/worker.php", b.URL, "own", "1", "1", "1")
	id := w.expect(t, `^pushed (\S+)$`, 10*time.Second)[1]
	w.exit(t, 30*time.Second)
	code, j := peek(t, b.URL, id)
	if code != 200 || j["last_error"] != "gmq: the handler ran out of time after 1 s" || j["failures"] != 1.0 || j["timeout"] != 1.0 {
		t.Errorf("job after its timeout: %d %v", code, j)
	}
}

// A handler that runs past the TTR (8 s of a 4 s TTR) is touched: the job
// is still the first delivery's at 4.5 s, is delivered once (a second
// worker process waits for it in vain), and acked. The handler runs well
// past the look at 4.5 s, so a loaded machine's late look still finds it
// running; the TTR leaves each touch (every 2 s) 2 s to land.
func TestWorkerTouchesPastTheTTR(t *testing.T) {
	b := fresh(t, nil)
	id := push(t, b.URL, `{"topic":"long","body":"{\"sleep\":8}","TTR":4}`)
	w := worker(t, b.URL, "long", 2, 1, 0)
	w.expect(t, `^start `+id+` 1 `, 10*time.Second)
	time.Sleep(4500 * time.Millisecond)
	if code, j := peek(t, b.URL, id); code != 200 || j["state"] != "reserved" || j["attempt"] != 1.0 || j["timeouts"] != 0.0 {
		t.Errorf("job at 4.5 s: %d %v, want reserved, attempt 1, no timeout", code, j)
	}
	w.expect(t, `^done `+id+` `, time.Minute)
	requireAcked(t, b.URL, id)
	w.signal(t, syscall.SIGTERM)
	w.exit(t, 30*time.Second)
	if n := w.count(`^start ` + id + ` `); n != 1 || strings.Contains(w.errors(), "failed") {
		t.Errorf("%d deliveries, log:\n%s", n, w.errors())
	}
}

// SIGTERM while a job runs: the handler finishes, its whole sleep (the
// signal waits), the job is acked, and the supervisor and its two worker
// processes exit 0.
func TestWorkerStopsAfterTheJobInHand(t *testing.T) {
	b := fresh(t, nil)
	id := push(t, b.URL, `{"topic":"stop","body":"{\"sleep\":1.5}"}`)
	w := worker(t, b.URL, "stop", 2, 1, 0)
	w.expect(t, `^start `+id+` `, 10*time.Second)
	w.signal(t, syscall.SIGTERM)
	m := w.expect(t, `^done `+id+` \d+ (\S+)`, 5*time.Second)
	if slept, _ := strconv.ParseFloat(m[1], 64); slept < 1.45 {
		t.Errorf("the handler slept %v s of 1.5: the signal cut it short", slept)
	}
	w.exit(t, 30*time.Second)
	requireAcked(t, b.URL, id)
	if out := w.output(); out[len(out)-1] != "stopped" {
		t.Errorf("run() did not return: %q", out)
	}
}

// A long poll under way when the stop comes still brings a job: the worker
// releases it, unrun, ready at once for another, and exits 0.
func TestWorkerReleasesAJobPoppedWhileStopping(t *testing.T) {
	b := fresh(t, nil)
	// A long poll of 60 s: still under way when the push comes, however
	// late a loaded machine makes it.
	w := worker(t, b.URL, "late", 1, 60, 0)
	w.expect(t, `^running$`, 10*time.Second)
	brokertest.Eventually(t, "its first long poll under way", func() bool { return b.Dispatcher.WaitingOn("late") == 1 })
	w.signal(t, syscall.SIGTERM)
	time.Sleep(200 * time.Millisecond) // the signal handled first: a lower bound
	id := push(t, b.URL, `{"topic":"late","body":"{}"}`)
	w.exit(t, time.Minute)
	if n := w.count(`^start `); n != 0 {
		t.Errorf("the handler ran %d times", n)
	}
	if code, j := peek(t, b.URL, id); code != 200 || j["state"] != "ready" || j["reserves"] != 1.0 {
		t.Errorf("job popped while stopping: %d %v, want ready after one reservation", code, j)
	}
}

// A worker killed (SIGKILL) mid-job: its heartbeat ends with it, nothing
// touches the job any more, and it comes back after its TTR with attempt 2.
func TestWorkerKilledMidJob(t *testing.T) {
	b := fresh(t, nil)
	id := push(t, b.URL, `{"topic":"killed","body":"{\"sleep\":30}","TTR":2}`)
	w := worker(t, b.URL, "killed", 1, 1, 0)
	w.expect(t, `^start `+id+` 1 `, 10*time.Second)
	w.signal(t, syscall.SIGKILL)
	killed := time.Now()
	// The heartbeat, left alone in the group, notices and ends: within
	// 10 s, a margin a loaded machine cannot overtake (it takes a moment).
	for syscall.Kill(-w.pid, 0) == nil {
		if time.Since(killed) > 10*time.Second {
			t.Fatal("the heartbeat process outlived its worker by 10 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	gone := time.Since(killed)
	j := brokertest.MustCall(t, 200, "POST", b.URL+"/api/v1/pop", `{"topics":["killed"],"timeout":60}`)
	took := time.Since(killed)
	// Back when its TTR (2 s) ran out after the last touch, which came at
	// the latest as the heartbeat ended: "ttr expired" says it was the TTR,
	// not a release; the bound allows a loaded machine 5 s more.
	if j["id"] != id || j["attempt"] != 2.0 || j["last_error"] != "ttr expired" || took > gone+7*time.Second {
		t.Errorf("after %v (heartbeat gone after %v): %v, want %s again on attempt 2 after its TTR", took, gone, j, id)
	}
}

// A worker process killed mid-job is replaced by the supervisor, and its
// job is done again, on attempt 2, once its TTR is over.
func TestWorkerSupervisorReplacesAKilledProcess(t *testing.T) {
	b := fresh(t, nil)
	id := push(t, b.URL, `{"topic":"replace","body":"{\"first_sleep\":30}","TTR":2}`)
	w := worker(t, b.URL, "replace", 2, 1, 0)
	m := w.expect(t, `^start `+id+` 1 (\d+)`, 10*time.Second)
	pid, _ := strconv.Atoi(m[1])
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	w.expect(t, `^done `+id+` `, 10*time.Second)
	requireAcked(t, b.URL, id)
	if want := fmt.Sprintf("worker process %d ended (signal 9): starting another", pid); !strings.Contains(w.errors(), want) {
		t.Errorf("the log lacks %q", want)
	}
	w.signal(t, syscall.SIGTERM)
	w.exit(t, 30*time.Second)
	if n := w.count(`^start ` + id + ` 2 `); n != 1 {
		t.Errorf("%d deliveries on attempt 2, want 1", n)
	}
}

// With maxJobs, a worker process ends after that many jobs and the
// supervisor starts a fresh one: every job is done once, by processes
// that each did at most maxJobs.
func TestWorkerMaxJobsRecyclesProcesses(t *testing.T) {
	const jobs, maxJobs = 8, 2
	b := fresh(t, nil)
	batch := strings.Repeat(`{"topic":"recycle","body":"{}"},`, jobs)
	brokertest.MustCall(t, 201, "POST", b.URL+"/api/v1/jobs/batch", `{"jobs":[`+strings.TrimSuffix(batch, ",")+`]}`)
	w := worker(t, b.URL, "recycle", 2, 1, maxJobs)
	done, pids := map[string]bool{}, map[string]int{}
	for range jobs {
		m := w.expect(t, `^done (\S+) (\d+) `, 10*time.Second)
		done[m[1]] = true
		pids[m[2]]++
	}
	for pid, n := range pids {
		if n > maxJobs {
			t.Errorf("process %s did %d jobs, more than %d", pid, n, maxJobs)
		}
	}
	if len(done) != jobs || len(pids) < jobs/maxJobs {
		t.Errorf("%d jobs done by %d processes, want %d by %d or more", len(done), len(pids), jobs, jobs/maxJobs)
	}
	w.signal(t, syscall.SIGTERM)
	w.exit(t, 30*time.Second)
}

// stop() in a handler of one forked worker process stops them all, as a
// signal to the supervisor does: the job is acked and run() returns.
func TestWorkerStopFromAHandler(t *testing.T) {
	b := fresh(t, nil)
	id := push(t, b.URL, `{"topic":"stopper","body":"{\"stop\":true}"}`)
	w := worker(t, b.URL, "stopper", 3, 1, 0)
	w.exit(t, 30*time.Second)
	requireAcked(t, b.URL, id)
	if out := w.output(); out[len(out)-1] != "stopped" {
		t.Errorf("run() did not return: %q", out)
	}
}

// A pop answered 4xx (here 401, no token) cannot be fixed by retrying:
// run() throws, from one process or from the supervisor of several, and
// the script ends with an error.
func TestWorkerStopsOnAWrongToken(t *testing.T) {
	b := fresh(t, func(c *config.Config) { c.Token = "the-right-token-long-enough" })
	for _, concurrency := range []int{1, 2} {
		t.Run(fmt.Sprintf("concurrency %d", concurrency), func(t *testing.T) {
			w := worker(t, b.URL, "denied", concurrency, 1, 0)
			if err := w.wait(t, 5*time.Second); err == nil || !strings.Contains(w.errors(), "gmq: 401: ") {
				t.Errorf("exit %v, log:\n%s", err, w.errors())
			}
		})
	}
}

// The README's copy-paste producer, worker, unique pushes, schedule,
// report and events, run as they are, against a broker with a token given through the
// environment.
func TestReadmeExamples(t *testing.T) {
	const token = "readme-token-long-enough"
	b := fresh(t, func(c *config.Config) { c.Token = token })
	dir := project(t)
	for _, name := range []string{"producer.php", "worker.php", "unique.php", "schedule.php", "report.php", "events.php"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(readmeBlock(name)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"GMQ_URL=" + b.URL, "GMQ_TOKEN=" + token}
	out, err := command(t, env, "producer.php").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "and one for later") {
		t.Fatalf("producer: %v\n%s", err, out)
	}
	// Run again before any worker: welcome-bob is live, its 409 is "stored"
	// (a new user's second run died on it).
	out, err = command(t, env, "producer.php").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "welcome-bob is already queued") {
		t.Fatalf("producer, again: %v\n%s", err, out)
	}
	// unique.php twice: the digest queued, then updated; the signup's key held.
	first, err := command(t, env, "unique.php").CombinedOutput()
	if err != nil {
		t.Fatalf("unique.php: %v\n%s", err, first)
	}
	digest := regexp.MustCompile(`^queued the digest (\S+)\nqueued the signup mail\n$`).FindSubmatch(first)
	if digest == nil {
		t.Fatalf("unique.php, first run:\n%s", first)
	}
	second, err := command(t, env, "unique.php").CombinedOutput()
	if err != nil || !regexp.MustCompile(`^updated the waiting digest `+regexp.QuoteMeta(string(digest[1]))+`\nthe signup mail is job \S+ already\n$`).Match(second) {
		t.Fatalf("unique.php, second run: %v\n%s", err, second)
	}
	// schedule.php twice: the report fired, then found waiting (a refused
	// fire now counts as a skip).
	first, err = command(t, env, "schedule.php").CombinedOutput()
	fired := regexp.MustCompile(`^daily-report fires next at \d{4}-\d\d-\d\dT0[78]:00:00Z\nfired daily-report now: job (\S+)\n` +
		`daily-report: '0 9 \* \* \*' in Europe/Berlin, 1 fires, 0 skips, last job (\S+)\n$`).FindSubmatch(first)
	if err != nil || fired == nil || string(fired[1]) != string(fired[2]) {
		t.Fatalf("schedule.php, first run: %v\n%s", err, first)
	}
	second, err = command(t, env, "schedule.php").CombinedOutput()
	if err != nil || !regexp.MustCompile(`^daily-report fires next at \S+\nthe last report still waits\n`+
		`daily-report: '0 9 \* \* \*' in Europe/Berlin, 1 fires, 1 skips, last job `+regexp.QuoteMeta(string(fired[1]))+`\n$`).Match(second) {
		t.Fatalf("schedule.php, second run: %v\n%s", err, second)
	}
	// report.php: its job made by a worker, read back completed with its result.
	out, err = command(t, env, "report.php").CombinedOutput()
	made := regexp.MustCompile(`^job (\d+) completed at \S+Z: /r/(\d+)\.pdf, 7 pages\n$`).FindSubmatch(out)
	if err != nil || made == nil || string(made[1]) != string(made[2]) {
		t.Fatalf("report.php: %v\n%s", err, out)
	}
	readmeEvents(t, b, token, env)
	w := start(t, env, "worker.php")
	for range 7 { // 4, then 3 more: welcome-bob once
		w.expect(t, `^sending `, 10*time.Second)
	}
	w.signal(t, syscall.SIGTERM)
	w.exit(t, 10*time.Second)
	if n := w.count(`^sending `); n != 7 || w.errors() != "" {
		t.Errorf("%d jobs sent, want 7; log:\n%s", n, w.errors())
	}
}

// readmeEvents runs the README's events.php (stopping after one end) on
// "exports" with events = true: it says it watches, then prints a job's
// completion with its result when the job is acked, and ends.
func readmeEvents(t *testing.T, b *brokertest.Broker, token string, env []string) {
	t.Helper()
	call := func(method, path, body string) {
		t.Helper()
		req, err := http.NewRequest(method, b.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode >= 300 {
			t.Fatalf("%s %s: %s", method, path, resp.Status)
		}
	}
	call("PUT", "/api/v1/topics/exports/config", `{"events": true}`)
	w := start(t, env, "events.php", "1")
	w.expect(t, `^watching exports$`, 10*time.Second)
	call("POST", "/api/v1/jobs", `{"id":"export-9","topic":"exports","body":"x"}`)
	call("POST", "/api/v1/pop", `{"topics":["exports"]}`)
	call("POST", "/api/v1/jobs/export-9/ack", `{"result":{"url":"/r/9.pdf"}}`)
	w.expect(t, `^job export-9 completed: \{"url":"/r/9\.pdf"\}$`, 10*time.Second)
	w.exit(t, 10*time.Second)
}

// Jobs whose JSON PHP cannot decode, a lone surrogate escape or arrays
// nested past json_decode's 512 (a webhook's answer kept as a follow-up's
// body), that a broker before issue 49's rules stored (written here through
// the dispatcher, which stores what it is given, as such a broker did), are
// failed by the worker with the reason, not left reserved: their pop used
// to throw, and the worker logged "pop failed" and popped them again after
// every TTR. The handler is not run on them, and the jobs after them are.
func TestWorkerFailsAJobItCannotDecode(t *testing.T) {
	b := fresh(t, nil)
	one := 1
	deep := strings.Repeat("[", 3000) + strings.Repeat("]", 3000)
	bad := map[string]string{}
	for body, why := range map[string]string{`{"s":"\ud800"}`: "Single unpaired UTF-16 surrogate", deep: "Maximum stack depth exceeded"} {
		p, err := b.Dispatcher.Push(context.Background(), job.Spec{Topic: "undecodable", Body: body, BodyJSON: true,
			TTR: 300 * time.Second, Priority: 1, Retry: &job.RetryPolicy{MaxAttempts: &one}})
		if err != nil {
			t.Fatal(err)
		}
		bad[strconv.FormatUint(p.ID, 10)] = why
	}
	good := push(t, b.URL, `{"topic":"undecodable","body":"{}","priority":2}`)
	w := worker(t, b.URL, "undecodable", 1, 1, 3) // ends after three jobs
	w.exit(t, 30*time.Second)
	for id, why := range bad {
		code, j := peek(t, b.URL, id)
		if reason, _ := j["last_error"].(string); code != 200 || j["state"] != "dead" || !strings.Contains(reason, "cannot decode the job: "+why) {
			t.Errorf("the undecodable job %s: %d %v, want it dead, failed saying %q", id, code, j, why)
		}
	}
	requireAcked(t, b.URL, good)
	if n := w.count(`^start `); n != 1 {
		t.Errorf("the handler ran %d times, want once (the decodable job)", n)
	}

	// pop and popMany give such a job back marked, beside the jobs they can read.
	for _, body := range []string{`{"s":"\ud800"}`, `["x\udc00"]`, deep} {
		if _, err := b.Dispatcher.Push(context.Background(), job.Spec{Topic: "undecodable-pop", Body: body, BodyJSON: true, TTR: time.Minute, Priority: 1}); err != nil {
			t.Fatal(err)
		}
	}
	push(t, b.URL, `{"topic":"undecodable-pop","body":{"ok":"\ufffd"},"priority":2}`)
	run(t, "testdata/undecodable.php", b.URL, "undecodable-pop")
}
