package lua

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestRepliesByName: the scripts reply with R.<NAME>, never a status's
// quoted word, and every R.<NAME> is a status Go knows (Statuses); a
// standalone script is given the ones it uses.
func TestRepliesByName(t *testing.T) {
	quoted := regexp.MustCompile(`'(` + strings.Join(Statuses, "|") + `)'`)
	command := regexp.MustCompile(`redis\.call\('[A-Z]+'`)
	for _, file := range luaFiles(t) {
		if file == ContractFile {
			continue
		}
		code := command.ReplaceAllString(codeOf(read(file)), "redis.call(COMMAND")
		if m := quoted.FindString(code); m != "" {
			t.Errorf("%s replies with %s: spell it R.%s", file, m, strings.Trim(m, "'"))
		}
		for _, s := range statusesOf(code) {
			if !slices.Contains(Statuses, s) {
				t.Errorf("%s replies with R.%s, which lua.Statuses does not hold", file, s)
			}
		}
	}
	if got := statusTable(statusesOf("if r[1] == R.EXISTS or r[1] == R.OK or r[1] == R.EXISTS then")); got != "{OK = 'OK', EXISTS = 'EXISTS'}" {
		t.Errorf("a standalone script that compares EXISTS and OK is given R = %s", got)
	}
}
