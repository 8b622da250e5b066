package main

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/gmq/gmq/client"
)

// semverRE is semver.org's regular expression for a version (2.0.0).
var semverRE = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)` +
	`(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?` +
	`(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`)

// A component is a part of gmq that has a version, named by CHANGELOG.md's
// Versions list as "- label: VERSION", and the places that version is
// written.
type component struct {
	label string
	found []versionAt
}

// versionAt is one place a version is written: where, and what it says.
type versionAt struct{ where, version string }

// The broker's version, each client's manifest and each client's version
// constant are semantic versions, and they are what CHANGELOG.md's newest
// release names, so none is bumped without the others that should be and
// without a changelog entry.
func TestVersionsAgreeWithChangelog(t *testing.T) {
	release, listed := newestRelease(t)
	components := []component{
		{"gmq, the broker", []versionAt{{"main.go's version", version}}},
		{"Go client, the module github.com/gmq/gmq/client", []versionAt{{"client.Version", client.Version}}},
		{"Python client, gmq-client", []versionAt{
			{"clients/python/gmq_client/client.py's VERSION (the package's, gmq_backend.version)",
				literal(t, "clients/python/gmq_client/client.py", `(?m)^VERSION = "([^"]*)"$`)}}},
		{"PHP client, gmq/client", []versionAt{
			{"clients/php/composer.json", manifest(t, "clients/php/composer.json")},
			{"Gmq\\Version::VERSION", literal(t, "clients/php/src/Version.php", `public const VERSION = '([^']*)';`)}}},
		{"Node client, gmq-client", []versionAt{
			{"clients/node/package.json", manifest(t, "clients/node/package.json")},
			{"index.js's version export", literal(t, "clients/node/index.js", `(?m)^export const version = '([^']*)';`)}}},
	}
	if version != release {
		t.Errorf("main.go's version is %q, CHANGELOG.md's newest release %q", version, release)
	}
	for _, c := range components {
		want, ok := listed[c.label]
		if !ok {
			t.Errorf("CHANGELOG.md's %s lists no %q under Versions", release, c.label)
		}
		delete(listed, c.label)
		for _, at := range c.found {
			if !semverRE.MatchString(at.version) {
				t.Errorf("%s is %q, not a semantic version", at.where, at.version)
			}
			if ok && at.version != want {
				t.Errorf("%s is %q, CHANGELOG.md's %s says %s: %s", at.where, at.version, release, c.label, want)
			}
		}
	}
	for label := range listed {
		t.Errorf("CHANGELOG.md's %s lists %q under Versions, which this test does not know", release, label)
	}
}

// `gmq version` (and --version, -v) prints the broker's version.
func TestVersionCommandPrintsIt(t *testing.T) {
	for _, arg := range []string{"version", "--version", "-v"} {
		var out, errOut bytes.Buffer
		if code := gmq([]string{arg}, &out, &errOut); code != 0 || out.String() != "gmq "+version+"\n" || errOut.Len() != 0 {
			t.Errorf("gmq %s: exit %d, %q, %q; want gmq %s", arg, code, out.String(), errOut.String(), version)
		}
	}
}

// releaseRE is a release's heading in CHANGELOG.md: "## 0.1.0 - 2026-11-28".
var releaseRE = regexp.MustCompile(`^## (\S+) - \d{4}-\d{2}-\d{2}$`)

// newestRelease reads CHANGELOG.md: the version of its newest release (the
// first heading below "## Unreleased") and its Versions list, label to
// version.
func newestRelease(t *testing.T) (string, map[string]string) {
	t.Helper()
	text, err := os.ReadFile("CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(text), "\n")
	var heads []int
	for i, line := range lines {
		if strings.HasPrefix(line, "## ") {
			heads = append(heads, i)
		}
	}
	if len(heads) < 2 || lines[heads[0]] != "## Unreleased" {
		t.Fatalf(`CHANGELOG.md: want "## Unreleased", then the releases, newest first; its headings start at line %v`, heads)
	}
	m := releaseRE.FindStringSubmatch(lines[heads[1]])
	if m == nil || !semverRE.MatchString(m[1]) {
		t.Fatalf("CHANGELOG.md:%d: %q is not a release's heading (## VERSION - YYYY-MM-DD)", heads[1]+1, lines[heads[1]])
	}
	end := len(lines)
	if len(heads) > 2 {
		end = heads[2]
	}
	listed := map[string]string{}
	inVersions := false
	for _, line := range lines[heads[1]+1 : end] {
		switch {
		case strings.HasPrefix(line, "### "):
			inVersions = line == "### Versions"
		case inVersions && strings.HasPrefix(line, "- "):
			label, v, ok := strings.Cut(strings.TrimPrefix(line, "- "), ": ")
			if !ok {
				t.Fatalf("CHANGELOG.md: %q under Versions is not \"- label: VERSION\"", line)
			}
			listed[label] = v
		}
	}
	return m[1], listed
}

// manifest is a package.json's or composer.json's "version".
func manifest(t *testing.T, path string) string {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(text, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m.Version
}

// literal is the version a file writes as a literal: re's first group.
func literal(t *testing.T, path, re string) string {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(re).FindSubmatch(text)
	if m == nil {
		t.Fatalf("%s: no version matching %s", path, re)
	}
	return string(m[1])
}
