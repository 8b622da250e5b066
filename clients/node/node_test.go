// Package node_test runs the Node.js client (this folder, the npm package
// gmq-client) against live brokers: it packs the package, installs the
// tarball into a temporary project as a user would (offline: the package has
// no dependencies), and runs the node:test files of test/ there, which
// import it by its name. Nothing is left in the repository.
package node_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
	"github.com/gmq/gmq/internal/cutproxy"
)

func TestMain(m *testing.M) { brokertest.Main(m) }

// shipped is what the tarball must hold: the code and its types, no tests.
var shipped = []string{"README.md", "index.d.ts", "index.js", "lib/batches.js", "lib/client.js", "lib/errors.js", "lib/events.js", "lib/http.js",
	"lib/outcomes.js", "lib/schedules.js", "lib/webhook.js", "lib/wire.js", "lib/worker.js", "package.json"}

// A testFile is a file of test/ and what it runs against: a broker of its
// own (tweaked as the file needs, its URL in GMQ_URL) or none, and more
// environment variables.
type testFile struct {
	file   string
	broker bool
	tweak  func(*config.Config)
	env    []string
	proxy  bool // a cutproxy to the broker too (GMQ_PROXY), and a topic with its events bucket
}

// TestClient runs each file of test/ as a user's project would.
func TestClient(t *testing.T) {
	cases := []testFile{
		{file: "calls.test.js", broker: true},
		// Every waiting call past a request_timeout a third of its wait, and
		// past the client's own timeout (1 s).
		{file: "longpoll.test.js", broker: true, tweak: func(c *config.Config) { c.RequestTimeout = 400 * time.Millisecond },
			env: []string{"GMQ_WAIT=1.2"}},
		{file: "token.test.js", broker: true, tweak: func(c *config.Config) { c.Token = "s3cret" },
			env: []string{"GMQ_TOKEN=s3cret"}},
		{file: "retry.test.js"}, // a stub answers 503s, 409s, nothing
		{file: "worker.test.js", broker: true},
		{file: "delivery.test.js", broker: true}, // tokens: a late call never reaches a job pushed again with its id
		// completed jobs: a worker's result, the acks' results, a push's keepCompleted
		{file: "outcomes.test.js", broker: true},
		// follow-ups: an ack's push and its ids (ack, ackMany), a bad one's
		// 400, a worker's handler resolving to a Done
		{file: "followups.test.js", broker: true},
		// progress and a log; a worker's handler stopped when its job is
		// cancelled; a late ack's 410; cancel, waitEnd and pushAndWait
		{file: "cancel.test.js", broker: true},
		// workflows: after (waiting, released, withResults, onDependencyFailure),
		// a job's then and onDead, batches (callbacks with the summary, open,
		// closed, cancelled)
		{file: "workflows.test.js", broker: true},
		// events: a job's, resumed after a proxy between the iterator and the
		// broker cuts its connection, none missed or repeated; lost; types
		{file: "events.test.js", broker: true, proxy: true},
		// the README's producer, worker, unique pushes, schedule, report, events, pipeline and batch; SIGTERM, SIGKILL
		{file: "examples.test.js", broker: true},
		// webhook signatures (HTTP push delivery): verifyWebhook, and the README's receiver run and sent signed deliveries
		{file: "webhook.test.js"},
	}
	files, err := filepath.Glob("test/*.test.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !slices.ContainsFunc(cases, func(c testFile) bool { return "test/"+c.file == f }) {
			t.Errorf("%s is not in TestClient's table: it would never run", f)
		}
	}
	project := install(t)
	for _, tc := range cases {
		t.Run(strings.TrimSuffix(tc.file, ".test.js"), func(t *testing.T) {
			env := tc.env
			if tc.broker {
				b := brokertest.Fresh(t, tc.tweak)
				env = append(env, "GMQ_URL="+b.URL)
				if tc.proxy {
					const topic = "events-node"
					env = append(env, "GMQ_PROXY="+cutproxy.Start(t, b.URL).URL, "GMQ_EVENTS_TOPIC="+topic,
						"GMQ_EVENTS_BUCKET="+strconv.Itoa(b.Pool.EventsBucket(topic)))
				}
			}
			nodeTest(t, project, "test/"+tc.file, env)
		})
	}
}

// install packs this folder with npm, installs the tarball into a new
// project in a temporary folder (with npm's cache there too, and offline),
// copies the tests and examples beside it, and returns the project's path.
func install(t *testing.T) string {
	t.Helper()
	brokertest.Tool(t, "node", "GMQ_REQUIRE_NODE")
	npm := brokertest.Tool(t, "npm", "GMQ_REQUIRE_NODE")
	tmp := t.TempDir()
	packs, project := filepath.Join(tmp, "packs"), filepath.Join(tmp, "project")
	for _, dir := range []string{packs, project} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	npmEnv := append(environ(), "npm_config_cache="+filepath.Join(tmp, "npm-cache"), "npm_config_update_notifier=false",
		"npm_config_fund=false", "npm_config_audit=false")

	out := run(t, npmEnv, ".", npm, "pack", "--json", "--pack-destination", packs)
	var packed []struct {
		Filename string
		Files    []struct{ Path string }
	}
	if err := json.Unmarshal(out, &packed); err != nil || len(packed) != 1 {
		t.Fatalf("npm pack --json: %v\n%s", err, out)
	}
	var paths []string
	for _, f := range packed[0].Files {
		paths = append(paths, f.Path)
	}
	slices.Sort(paths)
	if !slices.Equal(paths, shipped) {
		t.Errorf("the tarball holds %v, want %v", paths, shipped)
	}

	manifest := `{"name": "gmq-node-test", "private": true, "type": "module"}`
	if err := os.WriteFile(filepath.Join(project, "package.json"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, npmEnv, project, npm, "install", "--offline", "--no-audit", "--no-fund", filepath.Join(packs, packed[0].Filename))
	for _, dir := range []string{"test", "testdata", "examples"} {
		if err := os.CopyFS(filepath.Join(project, dir), os.DirFS(dir)); err != nil {
			t.Fatal(err)
		}
	}
	return project
}

// Node's test runner closes with counts ("# pass 8" in TAP, "ℹ pass 8" in
// its spec reporter).
var (
	passed  = regexp.MustCompile(`(?m)^\S+ pass [1-9]`)
	clean   = regexp.MustCompile(`(?m)^\S+ fail 0$`)
	skipped = regexp.MustCompile(`(?m)^\S+ skipped 0$`)
)

// nodeTest runs node --test on file in project: every test must pass, and
// none may skip (a skip here means the environment is not what the file
// needs).
func nodeTest(t *testing.T, project, file string, env []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "--test", file)
	cmd.Dir, cmd.Env = project, append(environ(), env...)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("%s: %v", file, time.Since(start).Round(time.Millisecond))
	if err != nil || !passed.Match(out) || !clean.Match(out) || !skipped.Match(out) {
		t.Fatalf("node --test %s: %v\n%s", file, err, out)
	}
}

// run runs a command in dir and returns its standard output; a failure ends
// the test.
func run(t *testing.T, env []string, dir, name string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out, stderr.String())
	}
	return out
}

// environ is this process's environment without GMQ_ variables (a
// developer's GMQ_URL or GMQ_TOKEN would point the tests elsewhere), plus
// NO_COLOR for plain output.
func environ() []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "GMQ_") })
	return append(env, "NO_COLOR=1")
}

// The README's producer, worker, unique pushes, schedule, report, events,
// pipeline and batch are the examples the tests run, whole.
func TestReadmeQuotesTheExamples(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{"examples/producer.js", "examples/worker.js", "examples/unique.js", "examples/schedule.js",
		"examples/report.js", "examples/events.js", "examples/pipeline.js", "examples/batch.js"} {
		code, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(readme), "```js\n"+string(code)+"```\n") {
			t.Errorf("README.md does not quote %s as it is", file)
		}
	}
}
