package layers

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gmq/gmq/systemtest/harness"
)

// maxRedecided bounds the lines of the front ends that match an error
// with errors.Is or errors.As (issue 51: 41, goal at most 12). An outcome
// that is a result (a held unique key, a delivery gone, a topic unknown,
// a framing fault) is decided once, in job (job/held.go, job.Standing) or
// the TCP kit (internal/tcpserver: FaultOf, Answers), and each front end
// says how it sounds through its one table; what is left is each front
// end's own plumbing (HTTP's server closed, a client gone, Thrift's
// abandoned request, an event stream lagging).
const maxRedecided = 12

// redecidingFronts are the front ends counted, as paths from the root;
// kestrel/thrift/wire is Apache Thrift's generated code and not counted.
var redecidingFronts = []string{"web", "beanstalk", "kestrel", "gmqrpc"}

var matchesError = regexp.MustCompile(`errors\.(Is|As)\(`)

// The front ends do not re-decide the store's outcomes from its errors:
// at most maxRedecided lines of their hand-written, non-test Go match one.
func TestFrontEndsDoNotRedecideOutcomes(t *testing.T) {
	root := harness.MustRoot(t)
	var found []string
	for _, dir := range redecidingFronts {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d os.DirEntry, err error) error {
			switch {
			case err != nil:
				return err
			case d.IsDir() && filepath.ToSlash(path) == filepath.ToSlash(filepath.Join(root, "kestrel/thrift/wire")):
				return filepath.SkipDir
			case d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go"):
				return nil
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for i, line := range strings.Split(string(data), "\n") {
				if matchesError.MatchString(line) {
					rel, _ := filepath.Rel(root, path)
					found = append(found, rel+":"+strconv.Itoa(i+1)+": "+strings.TrimSpace(line))
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(found) > maxRedecided {
		t.Errorf("%d lines of the front ends match errors with errors.Is or errors.As, at most %d may: decide an outcome once "+
			"(job/held.go, internal/tcpserver) and answer it through the front end's table\n%s",
			len(found), maxRedecided, strings.Join(found, "\n"))
	}
	if len(found) == 0 {
		t.Fatalf("no line matched in %v under %s: is the walk looking in the right place?", redecidingFronts, root)
	}
}
