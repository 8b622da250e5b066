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

// Every default a script falls back to for a setting no layer sets
// (`cfg.NAME or 'VALUE'`, or a named constant) is the one job.BuiltIn says,
// which a topic's config view shows as its effective value.
func TestBuiltInAgreesWithTheScripts(t *testing.T) {
	entries, err := files.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	literal := regexp.MustCompile(`\.([a-z_]+) or '([^']*)'`)
	seen := 0
	for _, e := range entries {
		src, err := files.ReadFile(e.Name())
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range literal.FindAllStringSubmatch(string(src), -1) {
			want, known := job.BuiltIn[m[1]]
			if !known {
				continue // not a setting (a record's field, an argument)
			}
			seen++
			if m[2] != want {
				t.Errorf("%s: %s falls back to %q, job.BuiltIn says %q", e.Name(), m[1], m[2], want)
			}
		}
	}
	if seen < 20 {
		t.Fatalf("only %d of the scripts' fallbacks found: the pattern no longer matches them", seen)
	}
	for _, c := range []struct{ file, pattern, setting string }{
		{"lib_topics.lua", `local DEFAULT_MAX_FANOUT = '(\d+)'`, "max_fanout"},
		{"lib_groups.lua", `local GROUP_MAX_PARKED = (\d+)`, "group_max_parked"},
		{"batch_push.lua", `local DEFAULT_UNIQUE_FOR = '(\d+)'`, "unique_for"},
		{"lib_failures.lua", `local DEFAULT_MAX_ATTEMPTS = '(\d+)'`, "max_attempts"},
		{"lib_outcomes.lua", `local DEFAULT_KEEP_RESULTS = '(\d+)'`, "keep_results"},
	} {
		src, err := files.ReadFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(c.pattern).FindStringSubmatch(string(src))
		if m == nil || m[1] != job.BuiltIn[c.setting] {
			t.Errorf("%s: %s's default %v, job.BuiltIn says %q", c.file, c.setting, m, job.BuiltIn[c.setting])
		}
	}
}

// What fail_record keeps of a job's errors is what Go documents and reads
// (job.ErrorsKept, job.ErrorBytes, job.NoReason): one set of numbers in two
// places, as the other defaults are.
func TestFailureErrorsAgree(t *testing.T) {
	src := Source("lib_failures")
	m := regexp.MustCompile(`local KEPT, BYTES = (\d+), (\d+)`).FindStringSubmatch(src)
	if m == nil {
		t.Fatal("lib_failures.lua: no KEPT, BYTES")
	}
	if m[1] != strconv.Itoa(job.ErrorsKept) || m[2] != strconv.Itoa(job.ErrorBytes) {
		t.Fatalf("lib_failures.lua keeps %s errors of %s bytes; job says %d of %d", m[1], m[2], job.ErrorsKept, job.ErrorBytes)
	}
	if !regexp.MustCompile(`if err == '' then err = '` + regexp.QuoteMeta(job.NoReason) + `' end`).MatchString(src) {
		t.Fatalf("lib_failures.lua does not keep %q for a fail without an error", job.NoReason)
	}
}
