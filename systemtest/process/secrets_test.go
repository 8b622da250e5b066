package process

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gmq/gmq/internal/redistest"
	"github.com/gmq/gmq/systemtest/harness"
)

// A broker started with a Redis password never shows it: not in its
// start-up log, not when Redis cannot be reached, not over the API.
func TestRedisPasswordStaysSecret(t *testing.T) {
	const password = "s3cret-pa55"
	srv := redistest.Start(t)
	if _, err := srv.Do("CONFIG", "SET", "requirepass", password); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = srv.Do("AUTH", password, "CONFIG", "SET", "requirepass", "") })
	url := "redis://:" + password + "@" + srv.Addr
	b := harness.StartBroker(t, url)
	b.Must(201, "POST", "/api/v1/jobs", `{"topic":"t","body":"x"}`)
	for _, path := range []string{"/api/v1/redis", "/api/v1/stats"} {
		a, err := b.Do("GET", path, ``)
		shown, _ := json.Marshal(a.Body)
		if err != nil || strings.Contains(string(shown), password) {
			t.Fatalf("%s shows the password: %v %v", path, a.Body, err)
		}
	}
	if a, _ := b.Do("GET", "/api/v1/redis", ``); a.Body["url"] != "redis://:***@"+srv.Addr {
		t.Fatalf("/api/v1/redis shows the URL as %v, want it with the password hidden", a.Body["url"])
	}
	b.Kill()
	if log := b.Log.String(); strings.Contains(log, password) || !strings.Contains(log, ":***@") {
		t.Fatalf("the broker's log shows the password, or not the URL with it hidden:\n%s", log)
	}

	// Redis that cannot be reached: the error names the URL, password hidden.
	conf := filepath.Join(t.TempDir(), "conf.ini")
	if err := os.WriteFile(conf, []byte("[redis]\nconnect_timeout = 600ms\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(harness.Binary, "start", "--http", harness.FreeAddr(t), "--rpc", "", "--beanstalk", "", "--kestrel", "",
		"--redis", "redis://:"+password+"@127.0.0.1:1", "-c", conf).CombinedOutput()
	if err == nil || strings.Contains(string(out), password) || !strings.Contains(string(out), ":***@127.0.0.1:1") {
		t.Fatalf("start against an unreachable Redis: %v\n%s", err, out)
	}
}

// The token may come from $GMQ_TOKEN, so it need not be in a file or the
// process list.
func TestTokenFromEnvironment(t *testing.T) {
	srv := redistest.Start(t)
	addr := harness.FreeAddr(t)
	cmd := exec.Command(harness.Binary, "start", "--http", addr, "--rpc", "", "--beanstalk", "", "--kestrel", "", "--redis", srv.URL())
	cmd.Env = append(os.Environ(), "GMQ_TOKEN=from-the-env")
	log := &harness.SyncLog{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	get := func(token string) int {
		req, _ := http.NewRequest("GET", "http://"+addr+"/api/v1/stats", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	deadline := time.Now().Add(time.Minute)
	for get("from-the-env") != 200 {
		if time.Now().After(deadline) {
			t.Fatalf("the broker did not take the token from GMQ_TOKEN:\n%s", log)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code := get(""); code != 401 {
		t.Fatalf("no token: %d, want 401", code)
	}
	if strings.Contains(log.String(), "from-the-env") {
		t.Fatalf("the log shows the token:\n%s", log)
	}
}
