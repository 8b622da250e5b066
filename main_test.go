package main

import (
	"bufio"
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gmq/gmq/internal/redistest"
)

// SIGTERM stops accepting, lets an in-flight long poll finish, and exits 0.
func TestSIGTERMDrains(t *testing.T) {
	srv := redistest.Start(t)
	b := startBroker(t, srv.URL())
	polled := make(chan answer, 1)
	go func() {
		a, err := b.do("GET", "/api/v1/pop?topic=idle&timeout=1", ``)
		if err != nil {
			t.Error(err)
		}
		polled <- a
	}()
	time.Sleep(200 * time.Millisecond)
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if a := <-polled; a.code != 204 {
		t.Fatalf("in-flight long poll answered %d, want 204 when its time was up", a.code)
	}
	select {
	case <-b.done:
	case <-time.After(5 * time.Second):
		t.Fatal("broker still running 5s after SIGTERM")
	}
	if code := b.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit code %d after SIGTERM, want 0\n%s", code, b.log)
	}
	if _, err := b.do("GET", "/healthz", ``); err == nil {
		t.Fatal("still accepting after shutdown")
	}
}

func TestBadConfigNamesTheKey(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "conf.ini")
	if err := os.WriteFile(conf, []byte("[redis]\nbuckets = zero\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd := exec.Command(binary, "start", "-c", conf)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 1 {
		t.Fatalf("exit %v, want 1", err)
	}
	if !strings.Contains(out.String(), "[redis] buckets") {
		t.Fatalf("message %q does not name the key", out.String())
	}
}

func TestVersion(t *testing.T) {
	out, err := exec.Command(binary, "version").Output()
	if err != nil || !strings.HasPrefix(string(out), "gmq ") {
		t.Fatalf("%q %v", out, err)
	}
}

// SIGUSR1 puts the broker in drain mode: beanstalkd puts answer DRAINING.
func TestSIGUSR1Drains(t *testing.T) {
	srv := redistest.Start(t)
	b := startBroker(t, srv.URL())
	if err := b.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		conn, err := net.Dial("tcp", b.beanstalk)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Write([]byte("put 1 0 1 1\r\nx\r\n")); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(conn).ReadString('\n')
		conn.Close()
		if err == nil && line == "DRAINING\r\n" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("put after SIGUSR1: %q %v", line, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Over [server] max_connections, a new connection is told why and closed.
func TestConnectionLimit(t *testing.T) {
	srv := redistest.Start(t)
	b := startBroker(t, srv.URL())
	if err := os.WriteFile(b.conf, []byte("[redis]\nbuckets = 4\n[server]\nmax_connections = 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b.kill()
	b.start()
	for range 3 {
		c, err := net.Dial("tcp", b.beanstalk)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	time.Sleep(100 * time.Millisecond)
	c, err := net.Dial("tcp", b.beanstalk)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetReadDeadline(time.Now().Add(3 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(c).ReadString('\n'); err != nil || line != "OUT_OF_MEMORY\r\n" {
		t.Fatalf("fourth connection: %q %v, want OUT_OF_MEMORY", line, err)
	}
	// The broker's log reaches us through a pipe: give it a moment.
	for deadline := time.Now().Add(3 * time.Second); !strings.Contains(b.log.String(), "max_connections"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no log line names the limit:\n%s", b.log)
		}
	}
}
