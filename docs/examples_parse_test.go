package docs_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// parse reads a document's examples: the commands of its ```sh blocks, the
// programs of a page of programs, and the sample after either (see
// examples_test.go). A command runs on over lines ending in \ or inside an
// open quote; comment lines indented under a command (`#  …`) are output it
// must show.
func parse(t *testing.T, file string) []example {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	page := filepath.Base(file)
	var out []example
	cur := -1   // the command being read (an index of out), or -1
	fence := "" // the open block's language ("sh", "go", ""), when inBlock
	inBlock, first := false, false
	last, sample := -1, -1 // the last example of the block just closed; the example a sample block shows
	tokenBlock := false
	lineNo := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lineNo++
		line := sc.Text()
		if strings.HasPrefix(line, "```") {
			if inBlock { // its end
				last, sample, cur, inBlock = -1, -1, -1, false
				if fence == "sh" || isProgram(page, fence) {
					last = len(out) - 1
				}
				continue
			}
			inBlock, first, fence = true, true, strings.TrimSpace(strings.TrimPrefix(line, "```"))
			if fence == "" && last >= 0 {
				sample = last // right after a block: what its last command prints
			}
			if isProgram(page, fence) {
				out = append(out, example{where: fmt.Sprintf("%s:%d", page, lineNo+1), lang: fence})
			}
			continue
		}
		if !inBlock {
			if strings.TrimSpace(line) != "" {
				last = -1 // prose between: the next block is not a sample
			}
			continue
		}
		opening := first
		first = false
		switch {
		case sample >= 0:
			if strings.TrimSpace(line) != "" {
				out[sample].sample = append(out[sample].sample, line)
			}
			continue
		case isProgram(page, fence):
			out[len(out)-1].command += line + "\n"
			continue
		case fence != "sh":
			continue
		}
		if opening {
			tokenBlock = strings.Contains(line, "with [web] token set")
		}
		if cur >= 0 && open(out[cur].command) {
			out[cur].command += "\n" + line
			continue
		}
		trimmed := strings.TrimSpace(line)
		if trimmed == "" {
			cur = -1
			continue
		}
		if strings.HasPrefix(trimmed, "#") {
			if cur >= 0 && strings.HasPrefix(line, "#  ") {
				out[cur].output = append(out[cur].output, strings.TrimSpace(strings.TrimPrefix(line, "#")))
			} else {
				cur = -1
			}
			continue
		}
		out = append(out, example{where: fmt.Sprintf("%s:%d", page, lineNo), command: line, lang: "sh", token: tokenBlock})
		cur = len(out) - 1
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return keep(t, file, out)
}

// keep drops the commands of notRun and reads what each command must give
// from its trailing comment.
func keep(t *testing.T, file string, out []example) []example {
	t.Helper()
	status := regexp.MustCompile(`#\s*(\d{3})\b`)
	exit := regexp.MustCompile(`#\s*exit (\d+)`)
	var kept []example
	for _, ex := range out {
		if ex.lang != "sh" {
			kept = append(kept, ex)
			continue
		}
		if why, skip := skipped(ex.command); skip {
			t.Logf("%s: not run: %s (%s)", ex.where, ex.command, why)
			continue
		}
		comment := trailingComment(ex.command)
		if strings.HasPrefix(strings.TrimSpace(ex.command), "curl ") || strings.Contains(ex.command, "| curl ") {
			m := status.FindStringSubmatch(comment)
			if m == nil && os.Getenv("GMQ_DOCS_RECORD") == "1" {
				ex.status = -1 // run it and log what it gave, to write into the document
				kept = append(kept, ex)
				continue
			}
			if m == nil {
				t.Errorf("%s: %s\n  a curl example must state its status: end it with `# 200` (or the status it gets)", ex.where, ex.command)
				continue
			}
			ex.status, _ = strconv.Atoi(m[1])
		} else if m := exit.FindStringSubmatch(comment); m != nil {
			ex.exit, _ = strconv.Atoi(m[1])
		}
		kept = append(kept, ex)
	}
	if len(kept) == 0 && len(out) > 0 {
		t.Fatalf("%s: no example kept", file)
	}
	return kept
}

// isProgram says whether a block of this language on this page is a whole
// program to run.
func isProgram(page, lang string) bool {
	return programs[page] && (lang == "go" || lang == "python")
}

// skipped says whether a command is one of notRun, and why.
func skipped(command string) (string, bool) {
	for prefix, why := range notRun {
		if strings.HasPrefix(strings.TrimSpace(command), prefix) {
			return why, true
		}
	}
	return "", false
}

// open says whether a command goes on to the next line: a trailing \ or an
// unclosed single quote.
func open(command string) bool {
	if strings.HasSuffix(command, "\\") {
		return true
	}
	code := strings.TrimSuffix(command, trailingComment(command))
	return strings.Count(code, "'")%2 == 1
}

// trailingComment is what follows the last " #" outside quotes, on the
// command's last line.
func trailingComment(command string) string {
	inQuote, start := false, -1
	for i, r := range command {
		switch {
		case r == '\'':
			inQuote = !inQuote
		case r == '\n':
			start = -1
		case r == '#' && !inQuote && start < 0 && (i == 0 || command[i-1] == ' ' || command[i-1] == '\n'):
			start = i
		}
	}
	if start < 0 {
		return ""
	}
	return command[start:]
}
