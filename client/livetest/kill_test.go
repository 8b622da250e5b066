package livetest_test

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gmq/gmq/client"
)

// buildWorker builds testdata/worker, a worker process to stop or kill.
func buildWorker(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "worker")
	if out, err := exec.Command("go", "build", "-o", bin, "./testdata/worker").CombinedOutput(); err != nil {
		t.Fatalf("build the worker: %v\n%s", err, out)
	}
	return bin
}

// process is a worker process and the lines it prints.
type process struct {
	cmd   *exec.Cmd
	lines chan string // closed when its output ends
}

// startWorker runs the worker binary on topic; the test's end kills it if it
// still runs.
func startWorker(t *testing.T, bin, url, topic string) *process {
	t.Helper()
	cmd := exec.Command(bin, "-url", url, "-token", token, "-topic", topic, "-work", "1s")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd, lines: make(chan string, 16)}
	go func() {
		defer close(p.lines)
		s := bufio.NewScanner(out)
		for s.Scan() {
			p.lines <- s.Text()
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return p
}

// next is the process's next line ("" once its output ended).
func (p *process) next(t *testing.T, within time.Duration) string {
	t.Helper()
	select {
	case line := <-p.lines:
		return line
	case <-time.After(within):
		t.Fatalf("the worker printed nothing for %v", within)
		return ""
	}
}

// A worker process killed mid-job (SIGKILL: nothing runs, nothing is acked)
// loses no job: it comes back once its TTR runs out, its second attempt. A
// worker stopped by SIGTERM mid-job finishes it, acks it and exits 0.
func TestWorkerProcessStopped(t *testing.T) {
	bin := buildWorker(t)
	for _, tc := range []struct {
		name   string
		signal os.Signal
	}{
		{"SIGKILL", os.Kill},
		{"SIGTERM", syscall.SIGTERM},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const ttr = 2 * time.Second
			b := brokerWithToken(t, nil)
			c := client.NewWithOptions(b.URL, client.Options{Token: token})
			ctx := context.Background()
			pushed, err := c.Push(ctx, client.Job{ID: "mid-job", Topic: "proc", Body: "x", TTR: ttr.Seconds()})
			if err != nil {
				t.Fatal(err)
			}
			id := pushed.ID
			p := startWorker(t, bin, b.URL, "proc")
			if line := p.next(t, 10*time.Second); line != "started "+id+" 1" {
				t.Fatalf("the worker printed %q; want it to start the job", line)
			}
			if err := p.cmd.Process.Signal(tc.signal); err != nil {
				t.Fatal(err)
			}
			var rest []string
			for line := range p.lines { // to its end, before Wait closes the pipe
				rest = append(rest, line)
			}
			err = p.cmd.Wait()
			if tc.signal == os.Kill {
				start := time.Now()
				j, err := c.Pop(ctx, []string{"proc"}, 2*ttr)
				if err != nil || j == nil || j.ID != id || j.Attempt != 2 {
					t.Fatalf("after the kill: %+v %v; want the job back, attempt 2", j, err)
				}
				t.Logf("the job came back %v after the kill", time.Since(start))
				return
			}
			if err != nil || strings.Join(rest, "|") != "done "+id+"|stopped" || !gone(t, c, id) {
				t.Fatalf("after SIGTERM: exit %v, printed %q, acked %v; want exit 0, done then stopped, acked", err, rest, gone(t, c, id))
			}
		})
	}
}
