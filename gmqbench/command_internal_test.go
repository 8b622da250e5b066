package gmqbench

import (
	"bytes"
	"flag"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// -h and --help print the usage and every flag with what it means, on
// stdout, exit 0.
func TestMainHelp(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"--help"}, {"--clients", "3", "-help"}} {
		var out, errOut bytes.Buffer
		if code := Main(args, &out, &errOut); code != 0 || errOut.Len() > 0 {
			t.Fatalf("gmq bench %q: exit %d %s", args, code, errOut.String())
		}
		if !strings.HasPrefix(out.String(), "usage: gmq bench") {
			t.Errorf("gmq bench %q begins %q", args, out.String())
		}
		newCommand().flags.VisitAll(func(f *flag.Flag) {
			line := "  --" + strings.TrimSpace(f.Name+" "+placeholders[f.Name]) + " "
			if !strings.Contains(out.String(), line) || !strings.Contains(out.String(), f.Usage) {
				t.Errorf("gmq bench %q leaves out %q or what it means:\n%s", args, line, out.String())
			}
		})
	}
}

// The flags name the targets: the beanstalkd address(es) unless --http or
// --kestrel or --thrift, then --vs.
func TestTargets(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"beanstalk 127.0.0.1:11300"}},
		{[]string{"--beanstalk", "a:1, b:2,c:3"}, []string{"beanstalk a:1 +2"}},
		{[]string{"--http", "http://a:1,http://b:2", "--vs", "c:3"}, []string{"http http://a:1 +1", "beanstalk c:3"}},
		{[]string{"--kestrel", "k:1"}, []string{"kestrel k:1"}},
		{[]string{"--kestrel", "k:1", "--reliable", "--http", "http://a:1"}, []string{"kestrel k:1 (open/close)"}},
		{[]string{"--kestrel", "k:1, k:2,k:3"}, []string{"kestrel k:1 +2"}},
		{[]string{"--kestrel", "k:1,k:2", "--reliable", "--vs", "c:3"}, []string{"kestrel k:1 +1 (open/close)", "beanstalk c:3"}},
		{[]string{"--thrift", "t:1", "--vs", "c:3"}, []string{"thrift t:1", "beanstalk c:3"}},
		{[]string{"--thrift", "t:1", "--reliable"}, []string{"thrift t:1 (auto-abort/confirm)"}},
		{[]string{"--thrift", "t:1,t:2"}, []string{"thrift t:1 +1"}},
		{[]string{"--thrift", "t:1, t:2", "--reliable"}, []string{"thrift t:1 +1 (auto-abort/confirm)"}},
	} {
		c := newCommand()
		if err := c.parse(tc.args); err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		var names []string
		for _, target := range c.targets() {
			names = append(names, target.name)
		}
		if !slices.Equal(names, tc.want) {
			t.Errorf("%q: targets %q, want %q", tc.args, names, tc.want)
		}
	}
}

func TestParseProcesses(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []Process // nil: refused
	}{
		{"gmq=12", []Process{{"gmq", 12}}},
		{"gmq=12, redis=34", []Process{{"gmq", 12}, {"redis", 34}}},
		{"gmq", nil},
		{"gmq=", nil},
		{"=12", nil},
		{"gmq=-1", nil},
		{"gmq=0", nil},
		{"gmq=1x", nil},
		{"gmq=1,", nil},
	} {
		got, err := parseProcesses(tc.in)
		if (err != nil) != (tc.want == nil) || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("parseProcesses(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}
