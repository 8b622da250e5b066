// Command gmq is a Redis-backed delayed-job broker: producers push JSON jobs
// over HTTP, consumers pop, work and ack them, and Redis keeps every job, so
// brokers are stateless and several can share one Redis. main only
// assembles: `gmq start` runs package broker, `gmq bench` is package gmqbench's
// command line, and the administration commands are package admin's.
//
//	gmq start [-c conf.ini] [--http ADDR] [--beanstalk ADDR] [--rpc ADDR] [--kestrel ADDR] [--token T] [--redis URL]
//	gmq bench [FLAGS] | version | help [COMMAND] | stats | topics | push T BODY | pop T | ack ID | ...
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/gmq/gmq/admin"
	"github.com/gmq/gmq/gmqbench"
)

// version is the broker's release, semantic versioning (CHANGELOG.md names
// each release; version_test.go checks they agree). A build may set it with
// -ldflags "-X main.version=...".
var version = "0.1.0"

func main() { os.Exit(gmq(os.Args[1:], os.Stdout, os.Stderr)) }

// gmq runs a command line and returns its exit code: 0, 1 when the command
// failed, 2 when the line is wrong. The admin flags may come before the
// command (admin.Split); help, -h and --help print the usage, `gmq help
// CMD` is `gmq CMD --help`.
func gmq(args []string, out, errOut io.Writer) int {
	name, rest, err := admin.Split(args)
	switch {
	case err != nil:
		fmt.Fprintf(errOut, "gmq: %v\n", err)
		return 2
	case name == "help" || name == "-h" || name == "-help" || name == "--help":
		if topic, _, _ := admin.Split(rest); name == "help" && topic != "" {
			return gmq([]string{topic, "--help"}, out, errOut)
		}
		return exit(errOut, usage(out))
	case name == "start":
		return exit(errOut, start(rest, out))
	case name == "bench":
		return gmqbench.Main(rest, out, errOut)
	case name == "version" || name == "--version" || name == "-v":
		fmt.Fprintln(out, "gmq", version)
		return 0
	case admin.Known(name):
		return admin.Run(name, rest, out, errOut)
	case strings.HasPrefix(name, "-"):
		fmt.Fprintf(errOut, "gmq: unknown flag %q before the command (only --url, --token and --json go there)\ngmq help lists the commands\n", name)
		return 2
	case name != "":
		fmt.Fprintf(errOut, "gmq: unknown command %q\ngmq help lists the commands\n", name)
		return 2
	}
	usage(errOut) // a bare gmq: the usage is the answer
	return 2
}

// usage writes every command, one a line.
func usage(w io.Writer) error {
	return admin.WriteUsage(w, [][2]string{{"start [-c conf.ini] [FLAGS]", "run the broker"}, {"bench [FLAGS]", gmqbench.About},
		{"version", "print the version"}, {"help [COMMAND]", "this, or a command's usage and every flag"}})
}

// errUsage marks a command line that was not fully understood: exit 2.
var errUsage = errors.New("usage error")

// exit turns a command's error into its exit code, the error on errOut: 0
// for none, 2 for a usage error, else 1.
func exit(errOut io.Writer, err error) int {
	if err == nil {
		return 0
	}
	fmt.Fprintln(errOut, "gmq:", err)
	if errors.Is(err, errUsage) {
		return 2
	}
	return 1
}
