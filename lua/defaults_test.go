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

// The scripts' defaults of max_completed and max_result are the ones Go
// documents and checks against.
func TestOutcomeDefaultsAgree(t *testing.T) {
	m := regexp.MustCompile(`local DEFAULT_MAX_COMPLETED, DEFAULT_MAX_RESULT = '(\d+)', '(\d+)'`).FindStringSubmatch(Source("lib_outcomes"))
	if m == nil {
		t.Fatal("lib_outcomes.lua: no DEFAULT_MAX_COMPLETED, DEFAULT_MAX_RESULT")
	}
	if m[1] != strconv.Itoa(job.DefaultMaxCompleted) || m[2] != strconv.Itoa(job.DefaultMaxResult) {
		t.Fatalf("lib_outcomes.lua's defaults %s, %s; job's %d, %d", m[1], m[2], job.DefaultMaxCompleted, job.DefaultMaxResult)
	}
}

// The scripts' default keep_results is the one Go documents and shows.
func TestKeepResultsDefaultAgrees(t *testing.T) {
	m := regexp.MustCompile(`(?m)^  local DEFAULT_KEEP_RESULTS = '(\d+)'`).FindStringSubmatch(Source("lib_outcomes"))
	if m == nil {
		t.Fatal("lib_outcomes.lua: no DEFAULT_KEEP_RESULTS")
	}
	if n, _ := strconv.Atoi(m[1]); n != int(job.DefaultKeepResults.Seconds()) {
		t.Fatalf("lib_outcomes.lua's DEFAULT_KEEP_RESULTS is %d s, job.DefaultKeepResults %v", n, job.DefaultKeepResults)
	}
}
