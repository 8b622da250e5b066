package serverset

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"
)

// debianPython is the interpreter Debian's python3-kazoo is installed for.
const debianPython = "/usr/bin/python3"

// seen is one member as kazoo read it.
type seen struct {
	Name  string `json:"name"`
	Owner int64  `json:"owner"` // the session holding the ephemeral node
	Data  string `json:"data"`
}

// listing is both sets as kazoo read them.
type listing struct {
	Write []seen `json:"write"`
	Read  []seen `json:"read"`
	Error string `json:"error"`
}

// kazoo is a separate ZooKeeper client, Python's kazoo in a process of its
// own, that lists a prefix's sets on demand (testdata/members.py).
type kazoo struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Scanner
	errLog *os.File
	once   sync.Once
}

// startKazoo starts a kazoo reader of prefix's sets on hosts; it skips the
// test when kazoo is not installed and stops at the test's end.
func startKazoo(tb testing.TB, hosts, prefix string) *kazoo {
	tb.Helper()
	if err := exec.Command(debianPython, "-c", "import kazoo").Run(); err != nil {
		missing(tb, "python3-kazoo", err)
	}
	errLog, err := os.CreateTemp(tb.TempDir(), "kazoo-*.log")
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(debianPython, "testdata/members.py", hosts, prefix)
	cmd.Stderr = errLog
	in, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start kazoo: %v", err)
	}
	k := &kazoo{cmd: cmd, in: in, out: bufio.NewScanner(out), errLog: errLog}
	k.out.Buffer(nil, 1<<20)
	tb.Cleanup(k.stop)
	if !k.out.Scan() { // {"ready": true}: connected
		tb.Fatalf("kazoo did not connect to %s: %v\n%s", hosts, k.out.Err(), k.stderr())
	}
	return k
}

// list asks kazoo for both sets.
func (k *kazoo) list(tb testing.TB) listing {
	tb.Helper()
	if _, err := io.WriteString(k.in, "list\n"); err != nil {
		tb.Fatalf("ask kazoo: %v\n%s", err, k.stderr())
	}
	if !k.out.Scan() {
		tb.Fatalf("kazoo ended: %v\n%s", k.out.Err(), k.stderr())
	}
	var l listing
	if err := json.Unmarshal(k.out.Bytes(), &l); err != nil {
		tb.Fatalf("kazoo's answer %q: %v", k.out.Bytes(), err)
	}
	return l
}

// waitFor asks kazoo until cond holds, failing after a generous deadline
// (session expiries and server restarts take seconds).
func (k *kazoo) waitFor(tb testing.TB, what string, cond func(listing) bool) listing {
	tb.Helper()
	deadline := time.Now().Add(45 * time.Second)
	for {
		l := k.list(tb)
		if l.Error == "" && cond(l) {
			return l
		}
		if time.Now().After(deadline) {
			tb.Fatalf("kazoo never saw %s; last: %+v", what, l)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stop ends the reader: it exits when its input closes.
func (k *kazoo) stop() { k.once.Do(k.end) }

func (k *kazoo) end() {
	k.in.Close()
	done := make(chan struct{})
	go func() { k.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		k.cmd.Process.Kill()
		<-done
	}
	k.errLog.Close()
}

// stderr is what kazoo logged, for failures.
func (k *kazoo) stderr() string {
	b, err := os.ReadFile(k.errLog.Name())
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("kazoo's stderr:\n%s", b)
}

// counts says how many members each set has.
func counts(write, read int) func(listing) bool {
	return func(l listing) bool { return len(l.Write) == write && len(l.Read) == read }
}
