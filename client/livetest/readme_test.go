package livetest_test

import (
	"bufio"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/client"
)

// install is the README's Install, today's way: each line must be in the
// README as written, and runs in a new module with the path filled in.
var install = []string{
	"go mod edit -replace github.com/gmq/gmq/client=/path/to/gmq/client",
	"go get github.com/gmq/gmq/client@v0.0.0-00010101000000-000000000000",
}

// readmeExamples are the README's Go blocks, by the name of the command
// each is ("producer", "unique", "schedule", "worker", "report", "events").
func readmeExamples(t *testing.T) (readme string, blocks map[string]string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(clientDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks = map[string]string{}
	for _, m := range regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(string(data), -1) {
		name := regexp.MustCompile(`^// Command (\w+)`).FindStringSubmatch(m[1])
		if name == nil {
			t.Fatalf("a Go block of the README is not a command:\n%s", m[1])
		}
		blocks[name[1]] = m[1]
	}
	if len(blocks) != 7 || blocks["producer"] == "" || blocks["unique"] == "" || blocks["schedule"] == "" || blocks["worker"] == "" ||
		blocks["report"] == "" || blocks["events"] == "" || blocks["pipeline"] == "" {
		t.Fatalf("the README's Go blocks are %d, want a producer, unique pushes, a schedule, a worker, a report, a pipeline and events", len(blocks))
	}
	return string(data), blocks
}

// The README's worker is examples/worker, as written.
func TestReadmeWorkerIsTheExample(t *testing.T) {
	_, blocks := readmeExamples(t)
	file, err := os.ReadFile(filepath.Join(clientDir, "examples", "worker", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	if blocks["worker"] != string(file) {
		t.Fatal("the README's worker and examples/worker/main.go differ: copy one over the other")
	}
}

// The README's producer and worker, copied into a module of their own set up
// as its Install says (offline), build and run against a broker with a
// token: the producer pushes three mails, the worker sends them, and SIGTERM
// stops it with exit 0. Its events command prints a job's end as it comes,
// and SIGTERM stops it with exit 0. Its unique pushes, run twice, queue a digest and a
// signup mail, then update the digest and find the signup's key held. Its
// schedule, run twice, fires the report once, then finds it waiting. Its
// report is made by a worker that returns a result, read back completed.
// Its pipeline's follow-up, dependent and batch callback each come once,
// its worker stopped by the last.
func TestReadmeExamples(t *testing.T) {
	readme, blocks := readmeExamples(t)
	clientPath, err := filepath.Abs(clientDir)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// A proxy that refuses every connection, as an unpublished module's
	// lookup fails: GOPROXY=off resolved even a version-less go get through
	// the replace, and hid that a user's (proxy.golang.org: 403) fails.
	env := append(os.Environ(), "GOPROXY=http://127.0.0.1:9", "GOFLAGS=-mod=mod", "GOWORK=off")
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("go", "mod", "init", "example.com/mail")
	for _, line := range install {
		if !strings.Contains(readme, line) {
			t.Fatalf("the README no longer says %q", line)
		}
		run(strings.Fields(strings.ReplaceAll(line, "/path/to/gmq/client", clientPath))...)
	}
	for name, src := range blocks {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, "main.go"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		run("go", "build", "-o", filepath.Join(dir, "bin", name), "./"+name)
	}

	b := brokerWithToken(t, nil)
	runEnv := append(os.Environ(), "GMQ_URL="+b.URL, "GMQ_TOKEN="+token)
	producer := exec.Command(filepath.Join(dir, "bin", "producer"))
	producer.Env = runEnv
	out, err := producer.CombinedOutput()
	if err != nil || strings.Count(string(out), "pushed ") != 3 {
		t.Fatalf("producer: %v\n%s", err, out)
	}
	var ids []string
	for line := range strings.Lines(string(out)) {
		ids = append(ids, strings.TrimSpace(strings.TrimPrefix(line, "pushed ")))
	}
	command := func(name string) string {
		t.Helper()
		cmd := exec.Command(filepath.Join(dir, "bin", name))
		cmd.Env = runEnv
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
		return string(out)
	}
	first, second := command("unique"), command("unique")
	digest := regexp.MustCompile(`(?m)^queued the digest (\S+)\nqueued the signup mail\n$`).FindStringSubmatch(first)
	if digest == nil {
		t.Fatalf("unique, first run:\n%s", first)
	}
	if !regexp.MustCompile(`(?m)^updated the waiting digest ` + regexp.QuoteMeta(digest[1]) + `\nthe signup mail is job \S+ already\n$`).MatchString(second) {
		t.Fatalf("unique, second run:\n%s", second)
	}

	first, second = command("schedule"), command("schedule")
	fired := regexp.MustCompile(`^daily-report fires next at \d{4}-\d\d-\d\dT0[78]:00:00Z\nfired daily-report now: job (\S+)\n` +
		`daily-report: "0 9 \* \* \*" in Europe/Berlin, 1 fires, 0 skips, last job "(\S+)"\n$`).FindStringSubmatch(first)
	if fired == nil || fired[1] != fired[2] {
		t.Fatalf("schedule, first run:\n%s", first)
	}
	// The second run's fire now, refused (409), counts as a skip.
	if !regexp.MustCompile(`^daily-report fires next at \S+\nthe last report still waits\n` +
		`daily-report: "0 9 \* \* \*" in Europe/Berlin, 1 fires, 1 skips, last job "` + fired[1] + `"\n$`).MatchString(second) {
		t.Fatalf("schedule, second run:\n%s", second)
	}
	if j, err := client.NewWithOptions(b.URL, client.Options{Token: token}).Get(t.Context(), fired[1]); err != nil || j.Topic != "reports" {
		t.Fatalf("the fired report: %+v %v", j, err)
	}

	report := command("report")
	made := regexp.MustCompile(`^job (\d+) completed at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ: /r/(\d+)\.pdf, 7 pages\n$`).FindStringSubmatch(report)
	if made == nil || made[1] != made[2] {
		t.Fatalf("report:\n%s", report)
	}

	pipeline := command("pipeline")
	printedLines := strings.Split(strings.TrimSpace(pipeline), "\n")
	if len(printedLines) != 4 || printedLines[0] != "the load is waiting" || !slices.Contains(printedLines, `thumbnail: {"body":"img 9","result":{"width":64}}`) ||
		!slices.Contains(printedLines, `loading {"rows":120}`) ||
		!slices.ContainsFunc(printedLines, regexp.MustCompile(`^batch \d+ done: 2 parts of report 42$`).MatchString) {
		t.Fatalf("pipeline:\n%s", pipeline)
	}

	readmeEvents(t, b, filepath.Join(dir, "bin", "events"), runEnv)

	worker := exec.Command(filepath.Join(dir, "bin", "worker"))
	worker.Env = runEnv
	logs, err := worker.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := worker.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = worker.Process.Kill() })
	lines := make(chan string, 16)
	go func() { // ends when the worker's stderr does
		defer close(lines)
		for s := bufio.NewScanner(logs); s.Scan(); {
			lines <- s.Text()
		}
	}()
	c := client.NewWithOptions(b.URL, client.Options{Token: token})
	eventually(t, 10*time.Second, "the worker acked the three mails", func() bool {
		for _, id := range ids {
			if !gone(t, c, id) {
				return false
			}
		}
		return true
	})
	if err := worker.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var printed []string
	for line := range lines {
		printed = append(printed, line)
	}
	if err := worker.Wait(); err != nil || len(printed) == 0 || !strings.HasSuffix(printed[len(printed)-1], "stopped") ||
		countContaining(printed, "sending ") != 3 {
		t.Fatalf("worker: %v\n%s", err, strings.Join(printed, "\n"))
	}
}

func countContaining(lines []string, s string) int {
	n := 0
	for _, l := range lines {
		if strings.Contains(l, s) {
			n++
		}
	}
	return n
}

// readmeEvents runs the README's events command (bin) on a topic with
// events = true: it says it watches, prints a job's completion with its
// result as the job is acked, and ends with exit 0 on SIGTERM.
func readmeEvents(t *testing.T, b *brokertest.Broker, bin string, env []string) {
	t.Helper()
	req, err := http.NewRequest("PUT", b.URL+"/api/v1/topics/exports/config", strings.NewReader(`{"events": true}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("events = true on exports: %v %v", resp, err)
	}
	resp.Body.Close()
	cmd := exec.Command(bin)
	cmd.Env = env
	cmd.Stderr = testLog{t}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil { // a failure left it running: end it before its stderr's writer goes
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	lines := make(chan string, 16)
	go func() { // ends when the command's stdout does
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
				t.Fatalf("events printed %q; want %q", line, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("events did not print %q within 10 s", want)
		}
	}
	await("watching exports")
	c := client.NewWithOptions(b.URL, client.Options{Token: token})
	ctx := t.Context()
	if _, err := c.Push(ctx, client.Job{ID: "export-9", Topic: "exports", Body: "x"}); err != nil {
		t.Fatal(err)
	}
	j, err := c.Pop(ctx, []string{"exports"}, time.Second)
	if err != nil || j == nil {
		t.Fatalf("pop: %v %v", j, err)
	}
	if err := c.AckJobResult(ctx, j, map[string]string{"url": "/r/9.pdf"}); err != nil {
		t.Fatal(err)
	}
	await(`job export-9 completed: {"url":"/r/9.pdf"}`)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for range lines {
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("events after SIGTERM: %v", err)
	}
}
