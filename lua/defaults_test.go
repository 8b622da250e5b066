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

// The scripts' cap on one job's dependents is the one Go names in its 413.
func TestMaxDependentsAgrees(t *testing.T) {
	m := regexp.MustCompile(`(?m)^\s*local MAX_DEPENDENTS = (\d+)`).FindStringSubmatch(Source("lib_deps"))
	if m == nil {
		t.Fatal("lib_deps.lua: no MAX_DEPENDENTS")
	}
	if n, _ := strconv.Atoi(m[1]); n != job.MaxDependents {
		t.Fatalf("lib_deps.lua's MAX_DEPENDENTS is %d, job.MaxDependents %d", n, job.MaxDependents)
	}
}
