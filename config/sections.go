package config

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
)

// checkSections refuses a section that appears twice. ini merges them
// silently (the later keys win), so a second [schedule.x] or [topic.t]
// further down a long file would change the first without a word.
func checkSections(text []byte) error {
	first := map[string]int{}
	scan := bufio.NewScanner(bytes.NewReader(text))
	scan.Buffer(nil, len(text)+1)
	for line := 1; scan.Scan(); line++ {
		name, ok := sectionName(scan.Text())
		if !ok {
			continue
		}
		if at, seen := first[name]; seen {
			return fmt.Errorf("section [%s] appears twice (lines %d and %d): give it once", name, at, line)
		}
		first[name] = line
	}
	return nil
}

// sectionName reads a "[name]" line (a comment may follow it).
func sectionName(line string) (string, bool) {
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "[") {
		return "", false
	}
	end := strings.Index(line, "]")
	if end < 0 {
		return "", false
	}
	if rest := strings.TrimSpace(line[end+1:]); rest != "" && rest[0] != ';' && rest[0] != '#' {
		return "", false
	}
	return strings.TrimSpace(line[1:end]), true
}
