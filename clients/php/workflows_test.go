package php_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gmq/gmq/config"
)

// The README's workflows.php, as it is, against a broker with a token: the
// dependent job waits, the batch is made, and its worker prints the three
// ends (the then with its result, the dependent with its dependencies'
// results, the batch's callback with its summary), in any order.
func TestReadmeWorkflows(t *testing.T) {
	const token = "readme-token-long-enough"
	b := fresh(t, func(c *config.Config) { c.Token = token })
	dir := project(t)
	script := filepath.Join(dir, "workflows.php")
	if err := os.WriteFile(script, []byte(readmeBlock("workflows.php")), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(script) })
	out, err := command(t, []string{"GMQ_URL=" + b.URL, "GMQ_TOKEN=" + token}, "workflows.php").CombinedOutput()
	if err != nil {
		t.Fatalf("workflows.php: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 5 || !regexp.MustCompile(`^job \d+ is waiting$`).MatchString(lines[0]) ||
		!regexp.MustCompile(`^batch \d+ has jobs \d+ \d+$`).MatchString(lines[1]) {
		t.Fatalf("workflows.php's output:\n%s", out)
	}
	ends := slices.Sorted(slices.Values(lines[2:]))
	want := []*regexp.Regexp{
		regexp.MustCompile(`^loading with (extract day 5: ok, clean day 5: ok|clean day 5: ok, extract day 5: ok)$`),
		regexp.MustCompile(`^report 42: 2 of 2 parts done, mail ops@example\.com$`),
		regexp.MustCompile(`^thumbnail of image 9, 64 px wide$`),
	}
	for i, re := range want {
		if !re.MatchString(ends[i]) {
			t.Fatalf("workflows.php's ends, sorted: %q; want %v at %d", ends, re, i)
		}
	}
}
