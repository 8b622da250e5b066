package bench

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkIdleConsumers measures what 10,000 consumers waiting in long polls
// cost while nothing happens: Redis connections, and the broker's CPU over 10
// seconds. The broker runs as its own process (each process may hold 20,000
// file descriptors here). Run with -benchtime 1x; GMQ_IDLE_CONSUMERS changes
// the count. pops: each waits in GET /api/v1/pop; end-waits: each waits for
// a job of its own to end (GET /api/v1/jobs/{id}/wait, issue 34), which
// should hold no more Redis connections than the pops.
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
		idleWaiters(b, bin, n, "current_waiting", nil, func(int) string { return "/api/v1/pop?topic=idle&timeout=60" })
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
		idleWaiters(b, bin, n, "current_end_waits", push, func(i int) string { return fmt.Sprintf("/api/v1/jobs/w-%d/wait?timeout=60", i) })
	})
}

// idleWaiters starts a broker (bin), runs prepare on it, sends n requests
// that wait (path(i)) and, once the broker's stats say n wait (stat), reports
// its Redis connections and CPU over 10 s.
func idleWaiters(b *testing.B, bin string, n int, stat string, prepare func(base string), path func(i int) string) {
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
	if prepare != nil {
		prepare(base)
	}
	clientsBefore := connectedClients(b)

	transport := &http.Transport{MaxConnsPerHost: 0, MaxIdleConnsPerHost: n}
	httpClient := &http.Client{Transport: transport}
	defer transport.CloseIdleConnections()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(ctx, "GET", base+path(i), nil) // the URL is fixed and valid
			if resp, err := httpClient.Do(req); err == nil {
				resp.Body.Close()
			}
		})
		if i%200 == 199 {
			time.Sleep(20 * time.Millisecond) // stay within the listen backlog
		}
	}
	defer func() { cancel(); wg.Wait() }()
	waitWaiting(b, base, stat, n)

	for range b.N {
		during := connectedClients(b)
		cpuBefore := processCPU(b, broker.Process.Pid)
		const window = 10 * time.Second
		time.Sleep(window)
		cpu := processCPU(b, broker.Process.Pid) - cpuBefore
		b.ReportMetric(float64(n), "consumers")
		b.ReportMetric(float64(during), "redis-conns")
		b.ReportMetric(float64(during-clientsBefore), "added-redis-conns")
		b.ReportMetric(100*cpu.Seconds()/window.Seconds(), "%cpu")
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
