package process

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/gmq/gmq/internal/redistest"
	"github.com/gmq/gmq/systemtest/harness"
)

// SIGTERM stops accepting, lets an in-flight long poll finish, and exits 0.
func TestSIGTERMDrains(t *testing.T) {
	srv := redistest.Start(t)
	b := harness.StartBroker(t, srv.URL())
	polled := make(chan harness.Answer, 1)
	go func() {
		a, err := b.Do("GET", "/api/v1/pop?topic=idle&timeout=3", ``)
		if err != nil {
			t.Error(err)
		}
		polled <- a
	}()
	// The poll must be in flight, not on its way, when the signal comes.
	harness.WaitUntil(t, "the long poll waiting", func() bool { return b.Must(200, "GET", "/api/v1/stats", ``)["current_waiting"] == 1.0 })
	if err := b.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if a := <-polled; a.Code != 204 {
		t.Fatalf("in-flight long poll answered %d, want 204 when its time was up", a.Code)
	}
	b.ExitsCleanly(t, time.Minute, "SIGTERM")
	if _, err := b.Do("GET", "/healthz", ``); err == nil {
		t.Fatal("still accepting after shutdown")
	}
}

// SIGUSR1 puts the broker in drain mode: beanstalkd puts answer DRAINING.
func TestSIGUSR1Drains(t *testing.T) {
	srv := redistest.Start(t)
	b := harness.StartBroker(t, srv.URL())
	if err := b.Cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute) // only for a broker that never drains
	for {
		conn, err := net.Dial("tcp", b.Beanstalk)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Write([]byte("put 1 0 1 1\r\nx\r\n")); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(conn).ReadString('\n')
		conn.Close()
		if err == nil && line == "DRAINING\r\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("put after SIGUSR1: %q %v", line, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// SIGHUP and kestrel's reload re-read conf.ini's topic settings.
func TestReloadTopicSettings(t *testing.T) {
	srv := redistest.Start(t)
	b := harness.StartBroker(t, srv.URL())
	b.Kill()
	writeConf := func(maxItems int) {
		t.Helper()
		text := fmt.Sprintf("[redis]\nbuckets = 4\n[topic.x]\nmax_items = %d\n", maxItems)
		if err := os.WriteFile(b.Conf, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeConf(1)
	b.Start()
	push := func() int {
		a, _ := b.Do("POST", "/api/v1/jobs", `{"topic":"x","body":"b"}`)
		return a.Code
	}
	if code := push(); code != 201 {
		t.Fatalf("first push: %d", code)
	}
	if code := push(); code != 507 {
		t.Fatalf("push over max_items = 1: %d, want 507", code)
	}
	writeConf(3)
	if err := b.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute) // only for a reload that never applies
	for push() != 201 {
		if time.Now().After(deadline) {
			t.Fatalf("max_items = 3 not applied after SIGHUP:\n%s", b.Log)
		}
		time.Sleep(50 * time.Millisecond)
	}
	writeConf(1)
	if line, err := harness.Exchange(b.Kestrel, "reload\r\n"); err != nil || line != "Reloaded config.\r\n" {
		t.Fatalf("kestrel reload: %q %v", line, err)
	}
	if code := push(); code != 507 {
		t.Fatalf("push after the reload back to max_items = 1: %d, want 507", code)
	}
}

// With [kestrel] allow_shutdown, kestrel's shutdown stops the broker
// gracefully: exit code 0.
func TestKestrelShutdown(t *testing.T) {
	srv := redistest.Start(t)
	b := harness.StartBroker(t, srv.URL())
	b.RestartWith("", "[redis]\nbuckets = 4\n[kestrel]\nallow_shutdown = true\n")
	if line, err := harness.Exchange(b.Kestrel, "shutdown\r\n"); err == nil || line != "" {
		t.Fatalf("shutdown answered %q %v; want the connection closed", line, err)
	}
	b.ExitsCleanly(t, 10*time.Second, "kestrel's shutdown")
}
