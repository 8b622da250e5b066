package process

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gmq/gmq/internal/redistest"
	"github.com/gmq/gmq/systemtest/harness"
)

// gmq pop waits its whole --timeout, past the broker's request_timeout
// (issue 20: `gmq pop --timeout 5` answered 503 at the default 5 s). The
// broker's request_timeout here is not the default, and the wait is three
// times it.
func TestCLIPopOutlastsRequestTimeout(t *testing.T) {
	srv := redistest.Start(t)
	b := harness.StartBroker(t, srv.URL())
	b.RestartWith("", "[redis]\nbuckets = 4\n[server]\nrequest_timeout = 500ms\n")
	cmd := exec.Command(harness.Binary, "pop", "empty", "--timeout", "1.5")
	cmd.Env = append(os.Environ(), "GMQ_URL="+b.URL(""))
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if took := time.Since(start); err != nil || !strings.Contains(string(out), "(no job)") || took < 1450*time.Millisecond {
		t.Fatalf("gmq pop --timeout 1.5: %v after %v\n%s", err, took, out)
	}
}
