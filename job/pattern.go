package job

import (
	"fmt"
	"sort"
	"strings"
)

// A topic pattern names many topics in conf.ini ([topic.crawl/*]): '*'
// stands for any run of characters, '/' included, and the rest must be a
// topic's. Its settings lie over the defaults and under each topic's own;
// of several that match, the most specific (the most characters besides
// '*') lies on top (lua/lib.lua topic_config does the same).

// MaxTopicPatterns bounds conf.ini's patterns: every script call that reads
// a topic's settings matches the name against each of them.
const MaxTopicPatterns = 64

// IsTopicPattern says whether name is a pattern (has a '*').
func IsTopicPattern(name string) bool { return strings.Contains(name, "*") }

// ValidateTopicPattern checks a pattern: a topic name but for its '*'s.
func ValidateTopicPattern(pattern string) error {
	if !IsTopicPattern(pattern) {
		return fmt.Errorf("%w: topic pattern %q has no '*'", ErrInvalid, pattern)
	}
	if i := topicBytes.firstOutside(strings.ReplaceAll(pattern, "*", "x")); i >= 0 {
		return fmt.Errorf("%w: topic pattern %q has a character outside A-Za-z0-9-+/;.$_() and '*' at byte %d", ErrInvalid, pattern, i)
	}
	if err := ValidateTopic(strings.ReplaceAll(pattern, "*", "x")); err != nil {
		return fmt.Errorf("topic pattern %q: %w", pattern, err)
	}
	return nil
}

// MatchTopic says whether topic matches pattern.
func MatchTopic(pattern, topic string) bool {
	parts := strings.Split(pattern, "*")
	if !strings.HasPrefix(topic, parts[0]) {
		return false
	}
	rest := topic[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(rest, p)
		if i < 0 {
			return false
		}
		rest = rest[i+len(p):]
	}
	return len(parts) > 1 && strings.HasSuffix(rest, last) || len(parts) == 1 && rest == ""
}

// PatternsFor lays the settings of the patterns that match topic over one
// another, the most specific on top (its own and the defaults aside).
func PatternsFor(patterns map[string]TopicConfig, topic string) TopicConfig {
	var matching []string
	for p := range patterns {
		if MatchTopic(p, topic) {
			matching = append(matching, p)
		}
	}
	SortPatterns(matching)
	out := TopicConfig{}
	for _, p := range matching {
		out = patterns[p].Over(out)
	}
	return out
}

// SortPatterns orders patterns from the least specific to the most: by the
// characters besides '*', then by name.
func SortPatterns(patterns []string) {
	sort.Slice(patterns, func(i, j int) bool {
		a, b := specificity(patterns[i]), specificity(patterns[j])
		if a != b {
			return a < b
		}
		return patterns[i] < patterns[j]
	})
}

func specificity(pattern string) int { return len(pattern) - strings.Count(pattern, "*") }
