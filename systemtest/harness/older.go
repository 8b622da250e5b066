package harness

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/gmq/gmq/pool"
)

// BuildAt builds the broker of commit from this repository's history (git
// archive): a test of two versions on one Redis. Each commit is built once
// per test process, into the directory Main removes at the end: two
// tests of the same older broker (keep_results' and the errors' beside the
// commit before issue 49) share one build rather than each paying for it.
func BuildAt(t *testing.T, commit string) string {
	t.Helper()
	if err := exec.Command("git", "cat-file", "-e", commit+"^{commit}").Run(); err != nil {
		// A clone without this history (a shallow one, an exported tree)
		// cannot build the older broker; a clone of the repository can.
		if os.Getenv("GMQ_REQUIRE_HISTORY") != "" {
			t.Fatalf("commit %s is not in this clone's history: %v", commit, err)
		}
		t.Skipf("commit %s is not in this clone's history (a shallow clone?): the two-version test needs it", commit)
	}
	olderBuilds.Lock()
	b, ok := olderBuilds.of[commit]
	if !ok {
		b = &olderBuild{}
		olderBuilds.of[commit] = b
	}
	olderBuilds.Unlock()
	// Not binary's own directory: a broker there is taken for this tree's
	// (newBinary), given flags an older one does not know.
	b.once.Do(func() { b.bin, b.err = build(commit, filepath.Join(filepath.Dir(Binary), "older")) })
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.bin
}

// olderBuilds are the older brokers built by this test process, by commit.
var olderBuilds = struct {
	sync.Mutex
	of map[string]*olderBuild
}{of: map[string]*olderBuild{}}

type olderBuild struct {
	once sync.Once
	bin  string
	err  error
}

// build builds commit's broker into dir.
func build(commit, dir string) (string, error) {
	src, err := os.MkdirTemp("", "gmq-"+commit[:7])
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(src)
	root, err := Root()
	if err != nil {
		return "", err
	}
	archive := exec.Command("sh", "-c", fmt.Sprintf("git archive %s | tar -x -C %s", commit, src))
	archive.Dir = root // the whole tree: from a folder below, git archive takes that folder only
	if out, err := archive.CombinedOutput(); err != nil {
		return "", fmt.Errorf("the broker of commit %s is built from this clone's history (git archive): %v\n%s", commit, err, out)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "gmq-"+commit[:12])
	build := exec.Command("go", "build", "-trimpath", "-o", bin, ".") // -trimpath: the packages this commit shares come from the build cache
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build commit %s: %v\n%s", commit, err, out)
	}
	return bin, nil
}

// PlainBinary is gmq built without the race detector, whose shadow memory
// would swamp a measurement of the broker's own. It goes beside the race
// build, in the folder Main removes (a folder of its own was left behind,
// 50 MB a run).
var PlainBinary = sync.OnceValues(func() (string, error) {
	root, err := Root()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(filepath.Dir(Binary), "gmq-plain")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build gmq: %v\n%s", err, out)
	}
	return bin, nil
})

// MetaField reads a field of gmq:meta on the Redis at url, anew each call
// (the store's "format", ...), on a client of the test's own.
func MetaField(t *testing.T, url, field string) func() string {
	t.Helper()
	ctx := context.Background()
	client, err := pool.Dial(ctx, url, 5*time.Second, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	return func() string {
		v, _ := client.Do(ctx, client.B().Hget().Key("gmq:meta").Field(field).Build()).ToString()
		return v
	}
}
