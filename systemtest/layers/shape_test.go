package layers

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gmq/gmq/dispatcher"
	"github.com/gmq/gmq/systemtest/harness"
)

// The house's shape, as issue 51 measured it: each bound is a row of its
// goals, so that a change that grows the dispatcher's surface, a doc or a
// file past it fails here rather than in a later count.
func TestTheHouseKeepsItsShape(t *testing.T) {
	root := harness.MustRoot(t)
	files := trackedFiles(t, root)
	rootTests := 0
	var long []string
	for _, f := range files {
		if filepath.Dir(f) == "." && strings.HasSuffix(f, "_test.go") {
			rootTests++
		}
		if handWritten(f) {
			if n := lineCount(t, filepath.Join(root, f)); n > 500 && !generated(t, filepath.Join(root, f)) {
				long = append(long, f)
			}
		}
	}
	for _, c := range []struct {
		what      string
		got, most int
	}{
		{"the dispatcher's exported methods", reflect.TypeFor[*dispatcher.Dispatcher]().NumMethod(), 35},
		{"test files at the repository's root", rootTests, 3},
		{"docs/PERFORMANCE.md's lines", lineCount(t, filepath.Join(root, "docs/PERFORMANCE.md")), 600},
		{"docs/ARCHITECTURE.md's lines", lineCount(t, filepath.Join(root, "docs/ARCHITECTURE.md")), 500},
	} {
		t.Logf("%s: %d (at most %d)", c.what, c.got, c.most)
		if c.got > c.most {
			t.Errorf("%s: %d, at most %d", c.what, c.got, c.most)
		}
	}
	if len(long) > 0 {
		t.Errorf("hand-written files over 500 lines: %v (split them by concern)", long)
	}
}

// trackedFiles are the repository's files as git lists them.
func trackedFiles(t *testing.T, root string) []string {
	cmd := exec.Command("git", "ls-files")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Skipf("git ls-files: %v (not a git checkout)", err)
	}
	return strings.Fields(string(out))
}

// handWritten says whether f is code (tests aside, which grow with what
// they prove).
func handWritten(f string) bool {
	if strings.Contains(f, "_test.") || strings.Contains(f, "/testdata/") || strings.Contains(f, "node_modules/") {
		return false
	}
	switch filepath.Ext(f) {
	case ".go", ".lua", ".py", ".js", ".php", ".sh":
		return true
	}
	return false
}

// generated says whether the file says it was generated (Go's convention,
// or contract.lua's "DO NOT EDIT").
func generated(t *testing.T, path string) bool {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for i := 0; i < 5 && s.Scan(); i++ {
		if strings.Contains(s.Text(), "DO NOT EDIT") {
			return true
		}
	}
	return false
}

func lineCount(t *testing.T, path string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(data, []byte("\n"))
}

// kestrel's three ports (and their shared pieces) repeat no block of six
// lines across their files: what they share lives in one place
// (kestrel/openreads, kestrel/answer, kestrel/internal/kestreltest,
// internal/tcpserver). Blank lines, comments, lone braces and import
// blocks are not counted; Thrift's generated wire/ is left out. This
// catches lines repeated as they are; `duplicates --repo kestrel` (the
// tool library's) also finds blocks alike but for their names.
func TestKestrelPortsDoNotRepeatThemselves(t *testing.T) {
	root := harness.MustRoot(t)
	type place struct {
		file string
		line int
	}
	seen := map[string]place{}
	for _, f := range trackedFiles(t, root) {
		if !strings.HasPrefix(f, "kestrel/") || !strings.HasSuffix(f, ".go") || strings.Contains(f, "/wire/") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		var kept []place
		var text []string
		inImports := false
		for i, line := range strings.Split(string(data), "\n") {
			line = strings.TrimSpace(line)
			switch {
			case line == "import (":
				inImports = true
				continue
			case inImports:
				inImports = line != ")"
				continue
			case line == "" || strings.HasPrefix(line, "//") || strings.Trim(line, "{}(),") == "":
				continue
			}
			kept = append(kept, place{f, i + 1})
			text = append(text, line)
		}
		for k := 0; k+6 <= len(text); k++ {
			block := strings.Join(text[k:k+6], "\n")
			if at, ok := seen[block]; ok && at.file != f {
				t.Errorf("%s:%d repeats %s:%d (six lines): share it", f, kept[k].line, at.file, at.line)
			} else if !ok {
				seen[block] = kept[k]
			}
		}
	}
}
