package process

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/systemtest/harness"
)

// docs/gmq.service passes systemd's own check: systemd-analyze verify
// prints nothing (an unknown key or a bad value is only a warning, so any
// output fails the test). ExecStart's /usr/local/bin/gmq is the test's
// binary, since verify wants the command to exist.
func TestSystemdUnit(t *testing.T) {
	analyze := brokertest.Tool(t, "systemd-analyze", "GMQ_REQUIRE_SYSTEMD")
	unit, err := os.ReadFile(filepath.Join(harness.MustRoot(t), "docs/gmq.service"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(unit), "ExecStart=/usr/local/bin/gmq start -c /etc/gmq/conf.ini") {
		t.Fatal("docs/gmq.service does not start /usr/local/bin/gmq with /etc/gmq/conf.ini, as its install notes say")
	}
	path := filepath.Join(t.TempDir(), "gmq.service")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(string(unit), "/usr/local/bin/gmq", harness.Binary)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}
