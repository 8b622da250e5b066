package thrift_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// debianPython is the interpreter Debian's python3-thrift is installed for
// (a python3 earlier on PATH, a pyenv's, may not have it).
const debianPython = "/usr/bin/python3"

// Apache Thrift's Python client, its code generated from kestrel.thrift,
// drives every call over framed transport and binary protocol
// (testdata/client.py).
func TestPythonClient(t *testing.T) {
	compiler := need(t, "thrift", "thrift-compiler")
	if err := exec.Command(debianPython, "-c", "import thrift.transport.TTransport").Run(); err != nil {
		missing(t, "python3-thrift ("+debianPython+": "+err.Error()+")")
	}
	gen := t.TempDir()
	if out, err := exec.Command(compiler, "--gen", "py", "-out", gen, "kestrel.thrift").CombinedOutput(); err != nil {
		t.Fatalf("thrift --gen py: %v\n%s", err, out)
	}
	_, addr := start(t, nil)
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*replyWait)
	defer cancel()
	out, err := exec.CommandContext(ctx, debianPython, "testdata/client.py", gen, host, port).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("client.py: %v\n%s", err, out)
	}
}

// need is the path of a program the Python test needs, from package pkg.
func need(t *testing.T, name, pkg string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		missing(t, pkg+" ("+name+" not found)")
	}
	return path
}

// missing skips the test for what is missing, unless GMQ_REQUIRE_PYTHON=1
// (CI: every tool is installed) makes it fail.
func missing(t *testing.T, what string) {
	t.Helper()
	const hint = "; install it with: apt-get install -y thrift-compiler python3-thrift"
	if os.Getenv("GMQ_REQUIRE_PYTHON") == "1" {
		t.Fatalf("%s is missing (GMQ_REQUIRE_PYTHON=1)%s", what, hint)
	}
	t.Skipf("%s is missing%s", what, hint)
}
