package brokertest

import (
	"os"
	"os/exec"
	"testing"
)

// Tool returns the path of a program a test runs (python3, php, node…). A
// missing one skips the test, unless the environment variable require is
// "1" (.ci/run sets them: on CI every tool is installed, so none may skip).
func Tool(t testing.TB, name, require string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	if require != "" && os.Getenv(require) == "1" {
		t.Fatalf("%s not found (%s=1)", name, require)
	}
	t.Skipf("%s not found", name)
	return ""
}
