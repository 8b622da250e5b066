package process

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/systemtest/harness"
)

// make run (scripts/run.sh) on ports of its own, as the README says to run
// a second one: with no Redis there, it starts one (AOF on, in GMQ_DATA),
// builds gmq and starts it, which serves a push and a pop; Ctrl-C (SIGINT
// to the process group, as a terminal sends it) stops gmq, then that Redis.
// A Redis that took the port meanwhile is someone else's: left running.
func TestMakeRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds gmq and starts a Redis")
	}
	for _, replaced := range []bool{false, true} {
		t.Run(fmt.Sprintf("replaced=%v", replaced), func(t *testing.T) {
			root := harness.MustRoot(t)
			conf, err := os.ReadFile(filepath.Join(root, "conf.ini"))
			if err != nil {
				t.Fatal(err)
			}
			http := harness.FreeAddr(t)
			ours := strings.NewReplacer("127.0.0.1:8000", http, "127.0.0.1:11300", harness.FreeAddr(t),
				"127.0.0.1:9503", harness.FreeAddr(t), "127.0.0.1:22133", harness.FreeAddr(t)).Replace(string(conf))
			confPath := filepath.Join(t.TempDir(), "run.ini")
			if err := os.WriteFile(confPath, []byte(ours), 0o644); err != nil {
				t.Fatal(err)
			}
			redisAddr := harness.FreeAddr(t)
			var out bytes.Buffer
			cmd := exec.Command("bash", filepath.Join(root, "scripts/run.sh"))
			cmd.Env = append(os.Environ(), "GMQ_CONF="+confPath, "GMQ_REDIS=redis://"+redisAddr+"/0", "GMQ_DATA="+t.TempDir(),
				"GMQ_KEEP_REDIS=")
			cmd.Stdout, cmd.Stderr = &out, &out
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
			waitHTTP(t, "http://"+http+"/readyz", exited, &out)

			api := "http://" + http + "/api/v1"
			brokertest.MustCall(t, 201, "POST", api+"/jobs", `{"topic":"make-run","body":"hello"}`)
			brokertest.MustCall(t, 200, "POST", api+"/pop", `{"topics":["make-run"]}`)
			if replaced {
				redisDo(t, redisAddr, "SHUTDOWN NOSAVE")
				other := exec.Command("redis-server", "--bind", "127.0.0.1", "--port", strings.Split(redisAddr, ":")[1],
					"--save", "", "--dir", t.TempDir())
				if err := other.Start(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = other.Process.Kill(); _ = other.Wait() })
				waitPort(t, redisAddr, true)
			}
			if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-exited:
				if err != nil {
					t.Fatalf("make run after Ctrl-C: %v\n%s", err, out.String())
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("make run still runs 30 s after Ctrl-C:\n%s", out.String())
			}
			// The build says so (issue 49: make run was silent while it built).
			for _, line := range []string{"make run: building ./gmq", "make run: built ./gmq in "} {
				if !strings.Contains(out.String(), line) {
					t.Fatalf("make run did not say %q:\n%s", line, out.String())
				}
			}
			said := "stopping the Redis it started"
			if replaced {
				said = "is not its: left running"
			}
			if !strings.Contains(out.String(), said) {
				t.Fatalf("make run did not say %q:\n%s", said, out.String())
			}
			waitPort(t, redisAddr, replaced)
		})
	}
}

// waitHTTP waits until url answers 200, or make run exits, or a build and
// start take longer than a minute and a half.
func waitHTTP(t *testing.T, url string, exited <-chan error, out *bytes.Buffer) {
	t.Helper()
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		select {
		case err := <-exited:
			t.Fatalf("make run exited (%v):\n%s", err, out.String())
		default:
		}
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
	}
	t.Fatalf("gmq did not answer at %s:\n%s", url, out.String())
}

// redisDo sends one inline command to the Redis at addr and reads a line.
func redisDo(t *testing.T, addr, command string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte(command + "\r\n")); err != nil {
		t.Fatal(err)
	}
	_, _ = c.Read(make([]byte, 64)) // SHUTDOWN answers by closing
	waitPort(t, addr, false)
}

// waitPort waits until something listens on addr (open) or nothing does.
func waitPort(t *testing.T, addr string, open bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
		}
		if (err == nil) == open {
			return
		}
	}
	t.Fatalf("%s: listening should be %v", addr, open)
}

// A second make run while one runs (here: one of its ports taken) stops
// before it builds or starts anything, and says which setting to change: it
// used to rebuild ./gmq under the running broker, then fail on "address
// already in use". Every listen address conf.ini has is tried, so a front
// end added later without its check fails here ([kestrel] text_addr and
// thrift_addr once went unchecked).
func TestMakeRunRefusesAPortInUse(t *testing.T) {
	root := harness.MustRoot(t)
	conf, err := os.ReadFile(filepath.Join(root, "conf.ini"))
	if err != nil {
		t.Fatal(err)
	}
	busy, err := net.Listen("tcp", harness.FreeAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	keys := listenKeys(string(conf))
	if len(keys) < 7 {
		t.Fatalf("conf.ini has %d listen addresses (%v), want at least 7", len(keys), keys)
	}
	type taken struct {
		at   listenKey
		form string // the line that sets it, KEY for its key
	}
	// The forms gmq's ini library reads an address in (an attack found the
	// check took the last three for free ports).
	var cases []taken
	for _, form := range []string{"KEY = %s", "KEY = %s ; the default's", "KEY: %s", "KEY = %s # ours", `KEY = "%s"`} {
		cases = append(cases, taken{listenKey{"kestrel", "addr"}, form})
	}
	for _, at := range keys {
		cases = append(cases, taken{at, "KEY = %s"})
	}
	for _, tc := range cases {
		line := fmt.Sprintf(strings.Replace(tc.form, "KEY", tc.at.key, 1), busy.Addr().String())
		confPath := filepath.Join(t.TempDir(), "run.ini")
		if err := os.WriteFile(confPath, []byte(withListen(t, string(conf), tc.at, line)), 0o644); err != nil {
			t.Fatal(err)
		}
		built, _ := os.Stat(filepath.Join(root, "gmq"))
		cmd := exec.Command("bash", filepath.Join(root, "scripts/run.sh"))
		cmd.Env = append(os.Environ(), "GMQ_CONF="+confPath, "GMQ_REDIS=redis://"+harness.FreeAddr(t)+"/0", "GMQ_DATA="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); code != 1 {
			t.Fatalf("make run with %s %q in use: exit %d (%v), want 1:\n%s", tc.at, line, code, err, out)
		}
		for _, says := range []string{busy.Addr().String() + " (" + tc.at.String() + " in " + confPath + ") is already in use", "GMQ_CONF="} {
			if !strings.Contains(string(out), says) {
				t.Errorf("%s %q: make run did not say %q:\n%s", tc.at, line, says, out)
			}
		}
		if strings.Contains(string(out), "Redis") {
			t.Errorf("%s %q: make run went on to Redis:\n%s", tc.at, line, out)
		}
		if now, _ := os.Stat(filepath.Join(root, "gmq")); built != nil && (now == nil || !now.ModTime().Equal(built.ModTime())) {
			t.Errorf("%s %q: make run rebuilt ./gmq", tc.at, line)
		}
	}
}

// listenKey is a conf.ini key that names an address gmq listens on.
type listenKey struct{ section, key string }

func (k listenKey) String() string { return "[" + k.section + "] " + k.key }

// listens says whether section's key is a listen address: [server] http,
// and every key named addr or *_addr.
func listens(section, key string) bool {
	return key == "addr" || strings.HasSuffix(key, "_addr") || section == "server" && key == "http"
}

// eachSetting calls f with each key = value line of conf (by its index in
// lines), its section, key and value.
func eachSetting(lines []string, f func(i int, section, key, value string)) {
	section := ""
	for i, line := range lines {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") {
			section = strings.Trim(line, "[]")
			continue
		}
		if key, value, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, ";") {
			f(i, section, strings.TrimSpace(key), strings.TrimSpace(value))
		}
	}
}

// listenKeys are conf.ini's listen addresses, in the order the file has them.
func listenKeys(conf string) []listenKey {
	var keys []listenKey
	eachSetting(strings.Split(conf, "\n"), func(_ int, section, key, _ string) {
		if listens(section, key) {
			keys = append(keys, listenKey{section, key})
		}
	})
	return keys
}

// withListen is conf with the line of at replaced by line, and every other
// listen address that is set moved to a free port (an empty one stays off),
// so that only at can be found taken.
func withListen(t *testing.T, conf string, at listenKey, line string) string {
	t.Helper()
	lines := strings.Split(conf, "\n")
	eachSetting(lines, func(i int, section, key, value string) {
		switch {
		case !listens(section, key):
		case (listenKey{section, key}) == at:
			lines[i] = line
		case value != "":
			lines[i] = key + " = " + harness.FreeAddr(t)
		}
	})
	return strings.Join(lines, "\n")
}
