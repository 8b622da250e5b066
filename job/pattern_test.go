package job

import (
	"reflect"
	"testing"
)

func TestMatchTopic(t *testing.T) {
	for _, c := range []struct {
		pattern, topic string
		want           bool
	}{
		{"crawl/*", "crawl/a", true},
		{"crawl/*", "crawl/a/b", true},
		{"crawl/*", "crawl/", true},
		{"crawl/*", "crawl", false},
		{"crawl/*", "xcrawl/a", false},
		{"*/images", "site/images", true},
		{"*/images", "site/images2", false},
		{"a*b*c", "abc", true},
		{"a*b*c", "axxbyyc", true},
		{"a*b*c", "axxcyyb", false},
		{"a*a", "a", false},
		{"*", "anything", true},
	} {
		if got := MatchTopic(c.pattern, c.topic); got != c.want {
			t.Errorf("MatchTopic(%q, %q) = %v, want %v", c.pattern, c.topic, got, c.want)
		}
	}
}

// Of the patterns that match, the most specific lies on top.
func TestPatternsFor(t *testing.T) {
	patterns := map[string]TopicConfig{
		"*":          {"rate": "1", "burst": "9"},
		"crawl/*":    {"rate": "10", "max_reserved": "5"},
		"crawl/big*": {"rate": "100"},
		"mail*":      {"rate": "7"},
	}
	got := PatternsFor(patterns, "crawl/bigsite")
	want := TopicConfig{"rate": "100", "burst": "9", "max_reserved": "5"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("PatternsFor(crawl/bigsite) = %v, want %v", got, want)
	}
	if err := ValidateTopicPattern("crawl/*"); err != nil {
		t.Error(err)
	}
	for _, bad := range []string{"crawl", "crawl/ *", "-*"} {
		if ValidateTopicPattern(bad) == nil {
			t.Errorf("ValidateTopicPattern(%q) took it", bad)
		}
	}
}
