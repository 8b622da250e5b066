package main

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
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
		out, err := exec.CommandContext(ctx, binary, tt.args...).CombinedOutput()
		cancel()
		exit, ok := err.(*exec.ExitError)
		if !ok || exit.ExitCode() != 2 || !strings.Contains(string(out), tt.says) {
			t.Errorf("gmq %v: %v\n%s\nwant exit 2 saying %q", tt.args, err, out, tt.says)
		}
	}
}
