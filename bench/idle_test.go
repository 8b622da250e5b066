package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkIdleConsumers measures what 10,000 consumers waiting in long polls
// cost while nothing happens: Redis connections, the broker's CPU over 10
// seconds, and its memory (RSS) for each waiter. The broker runs as its own
// process (each process may hold 20,000 file descriptors here). Run with
// -benchtime 1x; GMQ_IDLE_CONSUMERS changes the count. pops: each waits in
// GET /api/v1/pop; end-waits: each waits for a job of its own to end (GET
// /api/v1/jobs/{id}/wait, issue 34), which should hold no more Redis
// connections than the pops; events: each holds an events stream (GET
// /api/v1/events, Server-Sent Events) of a topic with events on, where
// nothing happens.
func BenchmarkIdleConsumers(b *testing.B) {
	n := 10000
	if v := os.Getenv("GMQ_IDLE_CONSUMERS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	dir := b.TempDir()
	bin := filepath.Join(dir, "gmq")
	if out, err := exec.Command("go", "build", "-o", bin, "..").CombinedOutput(); err != nil {
		b.Fatalf("build gmq: %v\n%s", err, out)
	}
	b.Run("pops", func(b *testing.B) {
		idleWaiters(b, bin, n, waiters{stat: "current_waiting", path: func(int) string { return "/api/v1/pop?topic=idle&timeout=60" }})
	})
	b.Run("end-waits", func(b *testing.B) {
		push := func(base string) {
			for from := 0; from < n; from += 500 {
				var jobs []string
				for i := from; i < min(from+500, n); i++ {
					jobs = append(jobs, fmt.Sprintf(`{"id":"w-%d","topic":"idle-ends","body":"x"}`, i))
				}
				resp, err := http.Post(base+"/api/v1/jobs/batch", "application/json", strings.NewReader(`{"jobs":[`+strings.Join(jobs, ",")+`]}`))
				if err != nil || resp.StatusCode != 201 {
					b.Fatalf("push the jobs to wait for: %v %v", resp, err)
				}
				resp.Body.Close()
			}
		}
		idleWaiters(b, bin, n, waiters{stat: "current_end_waits", prepare: push,
			path: func(i int) string { return fmt.Sprintf("/api/v1/jobs/w-%d/wait?timeout=60", i) }})
	})
	b.Run("events", func(b *testing.B) {
		eventsOn := func(base string) {
			req, _ := http.NewRequest("PUT", base+"/api/v1/topics/idle-events/config", strings.NewReader(`{"events":true}`)) // fixed and valid
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil || resp.StatusCode != 200 {
				b.Fatalf("turn events on: %v %v", resp, err)
			}
			resp.Body.Close()
		}
		idleWaiters(b, bin, n, waiters{prepare: eventsOn, path: func(int) string { return "/api/v1/events?topics=idle-events" }})
	})
}

// waiters are the requests an idleWaiters run holds open.
type waiters struct {
	// stat is the count in /api/v1/stats that reaches n once all wait; ""
	// for a stream (events), which counts as waiting once its answer began.
	stat    string
	prepare func(base string) // nil: nothing to prepare
	path    func(i int) string
}

// idleWaiters starts a broker (bin), runs w.prepare on it, sends n requests
// that wait (w.path(i)) and, once all wait, reports its Redis connections,
// its CPU over 10 s, and its RSS before and after, per waiter.
func idleWaiters(b *testing.B, bin string, n int, w waiters) {
	redis.Flush(b)
	addr := freeAddr(b)
	broker := exec.Command(bin, "start", "--http", addr, "--beanstalk", "", "--rpc", "", "--kestrel", "", "--redis", redis.URL()) // HTTP alone: all of max_connections for it
	var log bytes.Buffer
	broker.Stdout, broker.Stderr = &log, &log
	if err := broker.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		_ = broker.Process.Kill() // the benchmark is over either way
		_ = broker.Wait()
	}()
	base := "http://" + addr
	waitHTTP(b, base+"/readyz")
	if w.prepare != nil {
		w.prepare(base)
	}
	clientsBefore := connectedClients(b)
	rssBefore := processRSS(b, broker.Process.Pid)

	transport := &http.Transport{MaxConnsPerHost: 0, MaxIdleConnsPerHost: n}
	httpClient := &http.Client{Transport: transport}
	defer transport.CloseIdleConnections()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var streaming atomic.Int64 // streams whose answer began
	for i := range n {
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(ctx, "GET", base+w.path(i), nil) // the URL is fixed and valid
			if resp, err := httpClient.Do(req); err == nil {
				streaming.Add(1)
				_, _ = io.Copy(io.Discard, resp.Body) // a stream's: until the benchmark ends it
				resp.Body.Close()
			}
		})
		if i%200 == 199 {
			time.Sleep(20 * time.Millisecond) // stay within the listen backlog
		}
	}
	defer func() { cancel(); wg.Wait() }()
	if w.stat != "" {
		waitWaiting(b, base, w.stat, n)
	} else {
		for deadline := time.Now().Add(60 * time.Second); streaming.Load() < int64(n); time.Sleep(200 * time.Millisecond) {
			if time.Now().After(deadline) {
				b.Fatalf("%d of %d streams began", streaming.Load(), n)
			}
		}
	}

	for range b.N {
		during := connectedClients(b)
		cpuBefore := processCPU(b, broker.Process.Pid)
		const window = 10 * time.Second
		time.Sleep(window)
		cpu := processCPU(b, broker.Process.Pid) - cpuBefore
		rss := processRSS(b, broker.Process.Pid)
		b.ReportMetric(float64(n), "consumers")
		b.ReportMetric(float64(during), "redis-conns")
		b.ReportMetric(float64(during-clientsBefore), "added-redis-conns")
		b.ReportMetric(100*cpu.Seconds()/window.Seconds(), "%cpu")
		b.ReportMetric(float64(rssBefore)/(1<<20), "rss-MB-before")
		b.ReportMetric(float64(rss)/(1<<20), "rss-MB-waiting")
		b.ReportMetric(float64(rss-rssBefore)/float64(n)/1024, "KiB/waiter")
		b.ReportMetric(0, "ns/op")
	}
}

func freeAddr(b *testing.B) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func waitHTTP(b *testing.B, url string) {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
	}
	b.Fatalf("%s never answered", url)
}

// waitWaiting waits until the broker reports n waiting consumers.
func waitWaiting(b *testing.B, base, stat string, n int) {
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		resp, err := http.Get(base + "/api/v1/stats")
		if err != nil {
			continue
		}
		var buf bytes.Buffer
		_, _ = buf.ReadFrom(resp.Body) // a short read shows as a count below n and is read again
		resp.Body.Close()
		if strings.Contains(buf.String(), fmt.Sprintf(`"%s":%d`, stat, n)) {
			return
		}
	}
	b.Fatalf("fewer than %d consumers got to wait", n)
}

func connectedClients(b *testing.B) int {
	n, err := redis.ConnectedClients()
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// processCPU reads a process's user+system CPU time from /proc.
func processCPU(b *testing.B, pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	fields := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+2:]))
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("parse /proc/%d/stat: %v %v", pid, err1, err2)
	}
	return time.Duration(utime+stime) * time.Second / 100 // clock ticks: 100 a second on Linux
}

// processRSS reads a process's resident memory (VmRSS) from /proc, in bytes.
func processRSS(b *testing.B, pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				b.Fatalf("parse /proc/%d/status: %q: %v", pid, line, err)
			}
			return kb << 10
		}
	}
	b.Fatalf("/proc/%d/status has no VmRSS", pid)
	return 0
}
