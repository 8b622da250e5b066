package layers

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gmq/gmq/systemtest/harness"
)

// The package rules of docs/ARCHITECTURE.md, checked on the real import
// graph (`go list`, the packages' own imports, tests left out), so that the
// picture cannot drift from the code.
const module = "github.com/gmq/gmq"

// frontEnds are the protocol servers over the dispatcher (broker.FrontEnd).
var frontEnds = []string{"web", "beanstalk", "gmqrpc", "kestrel/memcache", "kestrel/text", "kestrel/thrift", "webhook"}

const rueidis = "github.com/redis/rueidis"

func TestImportRules(t *testing.T) {
	imports := moduleImports(t)
	for pkg, deps := range imports {
		for _, dep := range deps {
			for _, rule := range importRules {
				if why := rule(pkg, dep); why != "" {
					t.Errorf("%s imports %s: %s", pkg, dep, why)
				}
			}
		}
	}
	if len(imports) < 10 {
		t.Fatalf("go list found only %d packages: %v", len(imports), imports)
	}
}

// The Go client (client/, a module of its own so that users fetch it
// without the broker's dependencies) speaks HTTP to a broker: it imports
// the standard library and itself, nothing of the broker's nor anyone's.
func TestClientStandsAlone(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "-f", `{{if not .Standard}}{{.ImportPath}}{{end}}`, "./...")
	cmd.Dir = filepath.Join(harness.MustRoot(t), "client")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list in client/: %v", err)
	}
	deps := strings.Fields(string(out))
	for _, dep := range deps {
		if dep != module+"/client" && !strings.HasPrefix(dep, module+"/client/") {
			t.Errorf("the Go client depends on %s", dep)
		}
	}
	if !slices.Contains(deps, module+"/client") {
		t.Fatalf("go list in client/ did not list the client: %q", deps)
	}
}

// importRules each say why pkg must not import dep, or "".
var importRules = []func(pkg, dep string) string{
	func(pkg, dep string) string {
		if (slices.Contains(frontEnds, pkg) || pkg == "metrics" || pkg == "kestrel/openreads") && (dep == "pool" || dep == "bucket" || dep == rueidis) {
			return "a front end (and the metrics) acts through the dispatcher and speaks of jobs with package job, never the store"
		}
		return ""
	},
	func(pkg, dep string) string {
		if dep == rueidis && pkg != "pool" {
			return "only pool talks to Redis"
		}
		return ""
	},
	func(pkg, dep string) string {
		if slices.Contains(frontEnds, dep) && pkg != "broker" {
			return "only broker assembles the front ends"
		}
		return ""
	},
	func(pkg, dep string) string {
		if pkg == "job" && isModule(dep) {
			return "job is the bottom layer: it imports nothing of gmq's"
		}
		return ""
	},
	func(pkg, dep string) string {
		if pkg == "pool" && isModule(dep) && dep != "job" && dep != "lua" {
			return "the store knows jobs and its scripts, nothing above it"
		}
		return ""
	},
	func(pkg, dep string) string {
		if pkg == "serverset" && isModule(dep) && dep != "job" {
			return "the server sets know the status (job) and ZooKeeper, nothing of the broker's"
		}
		if strings.HasPrefix(dep, "github.com/go-zookeeper/") && pkg != "serverset" {
			return "only serverset talks to ZooKeeper"
		}
		if strings.HasPrefix(dep, "github.com/apache/thrift") && pkg != "kestrel/thrift" && pkg != "kestrel/thrift/wire" && pkg != "gmqbench" {
			return "only kestrel/thrift speaks Thrift (and `gmq bench`'s client of it, gmqbench)"
		}
		return ""
	},
	func(pkg, dep string) string {
		if pkg == "admin" && isModule(dep) {
			return "the command-line administration speaks HTTP to a broker: none of its packages"
		}
		return ""
	},
	func(pkg, dep string) string {
		// systemtest/harness is the system tests' (its files are not
		// _test.go files only so that their packages can share it).
		if (dep == "broker" || strings.HasPrefix(dep, "broker/")) && pkg != "." && !strings.HasPrefix(pkg, "broker") &&
			!strings.HasPrefix(pkg, "systemtest/") {
			return "only main (and tests) use the assembled broker"
		}
		return ""
	},
}

// isModule says whether a trimmed import path is one of this module's packages.
func isModule(p string) bool { return !strings.Contains(p, ".") || p == "." }

// moduleImports maps each package of the module (its path trimmed of the
// module's, "." for main) to its imports, the module's trimmed likewise.
func moduleImports(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./...")
	cmd.Dir = harness.MustRoot(t) // every package of the module, from its root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	trim := func(p string) string {
		if p == module {
			return "."
		}
		if rest, ok := strings.CutPrefix(p, module+"/"); ok {
			return rest
		}
		if strings.Contains(p, ".") {
			return p
		}
		return "std:" + p
	}
	imports := map[string][]string{}
	for line := range strings.Lines(strings.TrimSpace(string(out))) {
		fields := strings.Fields(line)
		pkg := trim(fields[0])
		for _, dep := range fields[1:] {
			if d := trim(dep); !strings.HasPrefix(d, "std:") {
				imports[pkg] = append(imports[pkg], d)
			}
		}
		if _, ok := imports[pkg]; !ok {
			imports[pkg] = nil
		}
	}
	return imports
}
