package main

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gmq/gmq/internal/redistest"
	"github.com/gmq/gmq/systemtest/harness"
)

// A command line gmq does not fully understand starts nothing: the flag
// package stops at the first argument that is not a flag, so `start --http
// ADDR conf.ini --token s3cret` used to start a broker without the token
// (issue 20).
func TestCommandLineFullyUnderstood(t *testing.T) {
	for _, tt := range []struct {
		args []string
		says string
	}{
		{[]string{"start", "--http", "127.0.0.1:0", "conf.ini", "--token", "s3cret"}, `unexpected argument "conf.ini" (a configuration file is given with -c conf.ini)`},
		{[]string{"start", "--token", "s3cret", "extra"}, `unexpected argument "extra"`},
		{[]string{"start", "--no-such-flag"}, "flag provided but not defined"},
		{[]string{"bench", "--clients", "2", "stray"}, `unexpected argument "stray"`},
	} {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second) // a broker that started would not return
		out, err := exec.CommandContext(ctx, harness.Binary, tt.args...).CombinedOutput()
		cancel()
		exit, ok := err.(*exec.ExitError)
		if !ok || exit.ExitCode() != 2 || !strings.Contains(string(out), tt.says) {
			t.Errorf("gmq %v: %v\n%s\nwant exit 2 saying %q", tt.args, err, out, tt.says)
		}
	}
}

// gmq --help, -h and help print the usage; help CMD, CMD --help and CMD -h
// print that command's usage with every flag: on stdout, exit 0. A
// command gmq does not know is exit 2.
func TestHelp(t *testing.T) {
	for _, tt := range []struct {
		args []string
		code int
		says []string
	}{
		{[]string{"--help"}, 0, []string{"usage: gmq COMMAND", "  start ", "  bench ", "  ack ID ", "  release ID ", "  bury ID ", "  touch ID "}},
		{[]string{"-h"}, 0, []string{"usage: gmq COMMAND"}},
		{[]string{"help"}, 0, []string{"usage: gmq COMMAND", "GMQ_URL"}},
		{[]string{"--json", "help"}, 0, []string{"usage: gmq COMMAND"}},
		{[]string{"help", "push"}, 0, []string{"usage: gmq push TOPIC BODY", "--delay S ", "--ttr S ", "--priority N ", "--url URL ", "--token T ", "--json "}},
		{[]string{"push", "--help"}, 0, []string{"--delay S ", "--ttr S ", "--priority N "}},
		{[]string{"--url", "x:1", "release", "-h"}, 0, []string{"usage: gmq release ID [--attempt N] [--delay S] [--priority N]"}},
		{[]string{"help", "start"}, 0, []string{"usage: gmq start", "-c FILE ", "--http ADDR ", "--redis URL ", "--beanstalk ADDR ", "--rpc ADDR ", "--kestrel ADDR ", "--token T "}},
		{[]string{"start", "-h"}, 0, []string{"--redis URL "}},
		{[]string{"help", "bench"}, 0, []string{"usage: gmq bench", "--delay-rate N ", "--cpu NAME=PID,… ", "--vs ADDR "}},
		{[]string{"bench", "--help"}, 0, []string{"--reliable "}},
		{[]string{"help", "version"}, 0, []string{"gmq "}},
		{[]string{"help", "nosuch"}, 2, []string{`unknown command "nosuch"`, "gmq help lists the commands"}},
		{[]string{"nosuch"}, 2, []string{`unknown command "nosuch"`}},
		{[]string{"--bogus", "stats"}, 2, []string{`unknown flag "--bogus" before the command`}},
		{[]string{"--url"}, 2, []string{"flag needs an argument: --url"}},
		{[]string{}, 2, []string{"usage: gmq COMMAND"}},
	} {
		var out, errOut strings.Builder
		code := gmq(tt.args, &out, &errOut)
		text := out.String()
		if tt.code != 0 {
			text = errOut.String()
		}
		if code != tt.code || (tt.code == 0 && errOut.Len() > 0) {
			t.Errorf("gmq %q: exit %d, stderr %q; want %d", tt.args, code, errOut.String(), tt.code)
		}
		for _, want := range tt.says {
			if !strings.Contains(text, want) {
				t.Errorf("gmq %q lacks %q:\n%s", tt.args, want, text)
			}
		}
	}
}

// The admin flags may come before the command, with = or a separate value,
// and a URL without a scheme is http's.
func TestFlagsBeforeTheCommand(t *testing.T) {
	srv := redistest.Start(t)
	b := harness.StartBroker(t, srv.URL())
	for _, tt := range []struct {
		args []string
		says string
	}{
		{[]string{"--json", "stats"}, `"total_jobs": 0`},
		{[]string{"--url", b.URL(""), "topics"}, "TOPIC"},
		{[]string{"--url=" + b.URL(""), "--json", "status"}, `"status": "up"`},
		{[]string{"--url", b.Addr, "status"}, "up"},
		{[]string{"-url", b.Addr, "-token", "unused", "status", "--json"}, `"status": "up"`},
		{[]string{"--url", "http://127.0.0.1:1", "stats", "--url", b.Addr}, "jobs by state"}, // the last one given wins
	} {
		t.Setenv("GMQ_URL", b.URL(""))
		var out, errOut strings.Builder
		if code := gmq(tt.args, &out, &errOut); code != 0 || !strings.Contains(out.String(), tt.says) {
			t.Errorf("gmq %q: exit %d %q %q, want %q", tt.args, code, out.String(), errOut.String(), tt.says)
		}
	}
	t.Setenv("GMQ_URL", b.Addr) // no scheme
	var out, errOut strings.Builder
	if code := gmq([]string{"status"}, &out, &errOut); code != 0 || out.String() != "up\n" {
		t.Errorf("GMQ_URL=%s gmq status: exit %d %q %q", b.Addr, code, out.String(), errOut.String())
	}
}

// docs/cli.md's usage block is what `gmq help` prints, word for word (the
// README's bench usage once differed from the binary's).
func TestCLIDocShowsTheUsage(t *testing.T) {
	doc, err := os.ReadFile("docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut strings.Builder
	if code := gmq([]string{"help"}, &out, &errOut); code != 0 {
		t.Fatalf("gmq help: exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(string(doc), "```\n"+out.String()+"```\n") {
		t.Errorf("docs/cli.md's usage block is not gmq help's output:\n%s", out.String())
	}
}
