package serverset

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/gmq/gmq/job"
)

// The test binary is also the broker process the kill test SIGKILLs: under
// helperEnv it runs a ServerSet (Up) until signalled.
const (
	helperEnv       = "GMQ_SERVERSET_HELPER"
	helperHostsEnv  = "GMQ_SERVERSET_HOSTS"
	helperPrefixEnv = "GMQ_SERVERSET_PREFIX"
)

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		os.Exit(helperMain())
	}
	code := m.Run()
	stopSharedZooKeeper()
	os.Exit(code)
}

// helperMain is the helper process: a ServerSet with a 2 s session, Up.
func helperMain() int {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	opts := liveOptions(os.Getenv(helperHostsEnv), os.Getenv(helperPrefixEnv))
	opts.SessionTimeout, opts.Log = 2*time.Second, log
	s, err := New(opts)
	if err != nil {
		log.Error("helper", "err", err)
		return 2
	}
	s.SetStatus(job.Up)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := s.Run(ctx); err != nil {
		log.Error("helper", "err", err)
		return 1
	}
	return 0
}

// liveOptions are the options of the tests' brokers.
func liveOptions(hosts, prefix string) Options {
	return Options{
		Hosts:          []string{hosts},
		PathPrefix:     prefix,
		AdvertiseHost:  "10.1.2.3",
		Main:           Endpoint{Name: "memcache", Port: 22133},
		Additional:     map[string]int{"thrift": 2229, "text": 2222, "http": 8080, "beanstalk": 11300},
		SessionTimeout: 3 * time.Second,
	}
}

// liveData is the member data of liveOptions, written out by hand.
const liveData = `{"serviceEndpoint":{"host":"10.1.2.3","port":22133},"additionalEndpoints":{
	"memcache":{"host":"10.1.2.3","port":22133},"thrift":{"host":"10.1.2.3","port":2229},
	"text":{"host":"10.1.2.3","port":2222},"http":{"host":"10.1.2.3","port":8080},
	"beanstalk":{"host":"10.1.2.3","port":11300}},"status":"ALIVE"}`

var memberName = regexp.MustCompile(`^member_[0-9]{10}$`)

// runServerSet runs a ServerSet of opts in this process; the returned stop
// ends Run and waits for it, failing the test if it does not return or
// returns an error (also at the test's end).
func runServerSet(t *testing.T, opts Options) (*ServerSet, func()) {
	t.Helper()
	opts.Log = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Error("Run did not return within 15 s of its context's end")
		}
	}
	t.Cleanup(stop)
	return s, stop
}

// checkMembers checks l's members: well named, ephemeral, with the data.
func checkMembers(t *testing.T, l listing) {
	t.Helper()
	for _, m := range append(append([]seen(nil), l.Write...), l.Read...) {
		if !memberName.MatchString(m.Name) {
			t.Errorf("member %q: want member_ and ten digits", m.Name)
		}
		if m.Owner == 0 {
			t.Errorf("member %s is not ephemeral", m.Name)
		}
		sameJSON(t, m.Data, liveData)
	}
}

// TestStatusChanges drives one broker through the statuses and watches the
// sets through kazoo: Up is in both, WriteAvoid and ReadOnly in read only,
// Quiescent in none; the end of Run leaves at once, not a session timeout
// later.
func TestStatusChanges(t *testing.T) {
	t.Parallel()
	z := sharedZooKeeper(t)
	prefix := "/gmq-test/status"
	k := startKazoo(t, z.Addr, prefix)
	opts := liveOptions(z.Addr, prefix)
	opts.SessionTimeout = 30 * time.Second // longer than any wait below
	s, stop := runServerSet(t, opts)

	s.SetStatus(job.Up)
	l := k.waitFor(t, "Up: a member in both sets", counts(1, 1))
	checkMembers(t, l)
	if l.Write[0].Owner != l.Read[0].Owner {
		t.Errorf("write and read members have different sessions: %+v", l)
	}
	read := l.Read[0].Name

	s.SetStatus(job.WriteAvoid)
	l = k.waitFor(t, "WriteAvoid: read only", counts(0, 1))
	if l.Read[0].Name != read {
		t.Errorf("WriteAvoid rejoined the read set: %s, was %s", l.Read[0].Name, read)
	}
	s.SetStatus(job.Up)
	k.waitFor(t, "Up again: both", counts(1, 1))
	s.SetStatus(job.ReadOnly)
	k.waitFor(t, "ReadOnly: read only", counts(0, 1))
	s.SetStatus(job.Quiescent)
	k.waitFor(t, "Quiescent: none", counts(0, 0))
	s.SetStatus(job.Up)
	checkMembers(t, k.waitFor(t, "Up after Quiescent: both", counts(1, 1)))

	stop()
	k.waitFor(t, "the members gone when Run ended (the session closed)", counts(0, 0))
}

// TestKilledBroker: a broker process's members live with its session. When
// it stops answering (SIGSTOP) for longer than the session timeout, ZooKeeper
// removes them; when it comes back, it joins again in a new session; when
// it is SIGKILLed, they go a session timeout later.
func TestKilledBroker(t *testing.T) {
	t.Parallel()
	z := sharedZooKeeper(t)
	prefix := "/gmq-test/killed"
	k := startKazoo(t, z.Addr, prefix)
	logPath := t.TempDir() + "/helper.log"
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=1", helperHostsEnv+"="+z.Addr, helperPrefixEnv+"="+prefix)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the helper broker: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("helper's log:\n%s", b)
		}
	})

	before := k.waitFor(t, "the helper in both sets", counts(1, 1))
	checkMembers(t, before)

	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	k.waitFor(t, "the stopped helper's members expire", counts(0, 0))
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	after := k.waitFor(t, "the helper back in both sets", counts(1, 1))
	checkMembers(t, after)
	if after.Write[0].Owner == before.Write[0].Owner {
		t.Errorf("back in the same session %#x: want a new one", after.Write[0].Owner)
	}

	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	k.waitFor(t, "the killed helper's members gone", counts(0, 0))
}

// TestZooKeeperRestart: the broker's members come back when ZooKeeper is
// stopped and started again, with its data (the session resumes) and with
// its data lost (a new ensemble, which refuses the old connection).
func TestZooKeeperRestart(t *testing.T) {
	t.Parallel()
	z := startZooKeeper(t)
	prefix := "/gmq-test/restart"
	s, _ := runServerSet(t, liveOptions(z.Addr, prefix))
	s.SetStatus(job.Up)
	k := startKazoo(t, z.Addr, prefix)
	k.waitFor(t, "both sets before the restarts", counts(1, 1))
	k.stop() // kazoo too would be refused by a ZooKeeper that lost its data

	for _, wipe := range []bool{false, true} {
		start := time.Now()
		z.restart(t, wipe)
		t.Logf("ZooKeeper restarted (data wiped: %v) in %v", wipe, time.Since(start))
		k := startKazoo(t, z.Addr, prefix)
		t.Logf("kazoo connected after %v", time.Since(start))
		checkMembers(t, k.waitFor(t, fmt.Sprintf("both sets after a restart (data wiped: %v)", wipe), counts(1, 1)))
		t.Logf("both sets seen after %v", time.Since(start))
		k.stop()
	}
}
