package lua

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/gmq/gmq/job"
)

// The scripts' default max_attempts is the one Go documents and shows.
func TestDefaultMaxAttemptsAgrees(t *testing.T) {
	m := regexp.MustCompile(`(?m)^local DEFAULT_MAX_ATTEMPTS = '(\d+)'`).FindStringSubmatch(Source("lib_failures"))
	if m == nil {
		t.Fatal("lib_failures.lua: no DEFAULT_MAX_ATTEMPTS")
	}
	if n, _ := strconv.Atoi(m[1]); n != job.DefaultMaxAttempts {
		t.Fatalf("lib_failures.lua's DEFAULT_MAX_ATTEMPTS is %d, job.DefaultMaxAttempts %d", n, job.DefaultMaxAttempts)
	}
}
