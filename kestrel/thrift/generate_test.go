package thrift_test

import (
	"bytes"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/gmq/gmq/broker/brokertest"
)

// wire/ is what the compiler makes of kestrel.thrift now (generate.go).
func TestWireIsGenerated(t *testing.T) {
	thrift := brokertest.Tool(t, "thrift", "GMQ_REQUIRE_THRIFT")
	dir := t.TempDir()
	cmd := exec.Command(thrift, "--gen", "go:package_prefix=github.com/gmq/gmq/kestrel/thrift/,skip_remote", "-out", dir, "kestrel.thrift")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("thrift: %v\n%s", err, out)
	}
	made, err := filepath.Glob(filepath.Join(dir, "wire", "*.go"))
	if err != nil || len(made) == 0 {
		t.Fatalf("thrift made %v (%v)", made, err)
	}
	kept, err := filepath.Glob(filepath.Join("wire", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) != len(made) {
		t.Fatalf("wire/ has %d files, the compiler makes %d: run go generate ./kestrel/thrift", len(kept), len(made))
	}
	for _, path := range made {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		want, err := format.Source(src)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		got, err := os.ReadFile(filepath.Join("wire", filepath.Base(path)))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("wire/%s is stale (%v): run go generate ./kestrel/thrift", filepath.Base(path), err)
		}
	}
}
