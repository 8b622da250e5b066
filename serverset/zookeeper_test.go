package serverset

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// debianZooKeeperJar is Debian's zookeeper package's server: its manifest
// names the jars it needs, so it is the whole classpath.
const debianZooKeeperJar = "/usr/share/java/zookeeper.jar"

// installHint is what a test that skips for want of ZooKeeper says.
const installHint = "apt-get install -y zookeeper python3-kazoo (or set GMQ_ZOOKEEPER_CLASSPATH to a ZooKeeper's jars)"

// missing skips the test for want of what, or fails it under
// GMQ_REQUIRE_ZOOKEEPER=1 (as CI sets).
func missing(tb testing.TB, what string, err error) {
	tb.Helper()
	msg := fmt.Sprintf("%s not found (%v): %s", what, err, installHint)
	if os.Getenv("GMQ_REQUIRE_ZOOKEEPER") == "1" {
		tb.Fatal(msg)
	}
	tb.Skip(msg)
}

// zooKeeperCommand finds java and a ZooKeeper's classpath: the
// GMQ_ZOOKEEPER_CLASSPATH environment variable, else Debian's package
// (with slf4j-simple when installed, so that the server's log is kept).
func zooKeeperCommand() (java, classpath string, err error) {
	java, err = exec.LookPath("java")
	if err != nil {
		return "", "", err
	}
	if cp := os.Getenv("GMQ_ZOOKEEPER_CLASSPATH"); cp != "" {
		return java, cp, nil
	}
	if _, err := os.Stat(debianZooKeeperJar); err != nil {
		return "", "", err
	}
	classpath = debianZooKeeperJar
	if _, err := os.Stat("/usr/share/java/slf4j-simple.jar"); err == nil {
		classpath += ":/usr/share/java/slf4j-simple.jar"
	}
	return java, classpath, nil
}

// zooKeeper is a real standalone ZooKeeper server process on 127.0.0.1.
type zooKeeper struct {
	Addr     string
	dir      string
	java, cp string
	starts   int
	cmd      *exec.Cmd
	exited   chan struct{}
	logPath  string
	stopOnce sync.Once
}

// startZooKeeper starts a ZooKeeper owned by the test, stopped at its end;
// it skips the test when ZooKeeper is not installed.
func startZooKeeper(tb testing.TB) *zooKeeper {
	tb.Helper()
	z, err := launchZooKeeper(tb.TempDir())
	if errors.Is(err, errNoZooKeeper) {
		missing(tb, "ZooKeeper", err)
	}
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(z.stop)
	return z
}

var (
	sharedOnce sync.Once
	sharedZK   *zooKeeper
	sharedErr  error
	sharedDir  string
)

// sharedZooKeeper is one ZooKeeper for the tests that do not stop it,
// started by the first that asks and stopped by TestMain; each test uses a
// path prefix of its own.
func sharedZooKeeper(tb testing.TB) *zooKeeper {
	tb.Helper()
	sharedOnce.Do(func() {
		sharedDir, sharedErr = os.MkdirTemp("", "gmq-serverset-zk-")
		if sharedErr == nil {
			sharedZK, sharedErr = launchZooKeeper(sharedDir)
		}
	})
	if errors.Is(sharedErr, errNoZooKeeper) {
		missing(tb, "ZooKeeper", sharedErr)
	}
	if sharedErr != nil {
		tb.Fatal(sharedErr)
	}
	return sharedZK
}

// stopSharedZooKeeper ends the shared ZooKeeper, if one was started.
func stopSharedZooKeeper() {
	if sharedZK != nil {
		sharedZK.stop()
	}
	if sharedDir != "" {
		os.RemoveAll(sharedDir)
	}
}

var errNoZooKeeper = errors.New("no ZooKeeper installed")

// launchZooKeeper starts a server on a free port with its data in dir.
func launchZooKeeper(dir string) (*zooKeeper, error) {
	java, cp, err := zooKeeperCommand()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errNoZooKeeper, err)
	}
	// A free port found here may be taken by another test before
	// ZooKeeper binds it (the JVM starts slowly): then another port.
	for try := 1; ; try++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		addr := ln.Addr().String()
		ln.Close()
		z := &zooKeeper{Addr: addr, dir: dir, java: java, cp: cp}
		err = z.start(false)
		if err == nil {
			return z, nil
		}
		if log, _ := os.ReadFile(z.logPath); try == 5 || !bytes.Contains(log, []byte("Address already in use")) {
			return nil, err
		}
	}
}

// start runs the server (its data kept, or wiped: an ensemble that lost
// everything) and waits until a client gets a session.
func (z *zooKeeper) start(wipe bool) error {
	data := filepath.Join(z.dir, "data")
	if wipe {
		if err := os.RemoveAll(data); err != nil {
			return fmt.Errorf("wipe ZooKeeper's data: %w", err)
		}
	}
	if err := os.MkdirAll(data, 0o755); err != nil {
		return fmt.Errorf("ZooKeeper data dir: %w", err)
	}
	_, port, _ := net.SplitHostPort(z.Addr)
	// A 500 ms tick lets sessions be as short as 1 s (two ticks) and
	// expire within a tick of their timeout; no admin server (its port
	// 8080 would clash between tests).
	cfg := strings.Join([]string{"tickTime=500", "dataDir=" + data, "clientPort=" + port,
		"clientPortAddress=127.0.0.1", "admin.enableServer=false", "minSessionTimeout=1000",
		"maxSessionTimeout=60000", "maxClientCnxns=0", ""}, "\n")
	cfgPath := filepath.Join(z.dir, "zoo.cfg")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		return fmt.Errorf("write zoo.cfg: %w", err)
	}
	z.starts++
	z.logPath = filepath.Join(z.dir, "zookeeper-"+strconv.Itoa(z.starts)+".log")
	logFile, err := os.Create(z.logPath)
	if err != nil {
		return fmt.Errorf("ZooKeeper log: %w", err)
	}
	defer logFile.Close()
	cmd := exec.Command(z.java, "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-cp", z.cp, "org.apache.zookeeper.server.ZooKeeperServerMain", cfgPath)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start ZooKeeper: %w", err)
	}
	z.cmd, z.exited = cmd, make(chan struct{})
	go func(exited chan struct{}) { cmd.Wait(); close(exited) }(z.exited)
	if err := z.waitServing(time.Now().Add(60 * time.Second)); err != nil {
		z.kill()
		return err
	}
	return nil
}

// waitServing waits until the port accepts, then until a client gets a
// session (the four-letter words are off by default since 3.5). A server
// still starting may accept and not answer, and the client would wait out
// its handshake for seconds: each try is cut short and made again.
func (z *zooKeeper) waitServing(deadline time.Time) error {
	for {
		c, err := net.DialTimeout("tcp", z.Addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		if err := z.pause(deadline, "accept connections"); err != nil {
			return err
		}
	}
	for {
		ok, err := z.trySession(time.Now().Add(2 * time.Second))
		if ok || err != nil {
			return err
		}
		if err := z.pause(deadline, "give a session"); err != nil {
			return err
		}
	}
}

// trySession tells whether a client gets a session before until.
func (z *zooKeeper) trySession(until time.Time) (bool, error) {
	d := &dialer{}
	zc, _, err := zk.Connect([]string{z.Addr}, 2*time.Second, zk.WithDialer(d.dial),
		zk.WithLogger(quietZK{}), zk.WithLogInfo(false))
	if err != nil {
		return false, fmt.Errorf("connect to ZooKeeper: %w", err)
	}
	defer zc.Close()
	defer d.close()
	for time.Now().Before(until) {
		if zc.State() == zk.StateHasSession {
			return true, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false, nil
}

// pause waits a little, failing at deadline or if the server died.
func (z *zooKeeper) pause(deadline time.Time, what string) error {
	if time.Now().After(deadline) {
		return fmt.Errorf("ZooKeeper at %s did not %s in time; its log:\n%s", z.Addr, what, z.logTail())
	}
	select {
	case <-z.exited:
		return fmt.Errorf("ZooKeeper exited before it would %s; its log:\n%s", what, z.logTail())
	case <-time.After(50 * time.Millisecond):
		return nil
	}
}

// restart stops the server and starts it again on the same port.
func (z *zooKeeper) restart(tb testing.TB, wipe bool) {
	tb.Helper()
	z.kill()
	if err := z.start(wipe); err != nil {
		tb.Fatal(err)
	}
}

// kill ends the server at once (SIGKILL) and waits for it.
func (z *zooKeeper) kill() {
	if z.cmd == nil {
		return
	}
	z.cmd.Process.Kill()
	<-z.exited
	z.cmd = nil
}

// stop ends the server for good.
func (z *zooKeeper) stop() { z.stopOnce.Do(z.kill) }

// logTail is the end of the server's current log, for failures.
func (z *zooKeeper) logTail() string {
	b, err := os.ReadFile(z.logPath)
	if err != nil {
		return err.Error()
	}
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// quietZK silences the test's own ZooKeeper clients.
type quietZK struct{}

func (quietZK) Printf(string, ...any) {}
