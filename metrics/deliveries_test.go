package metrics

import "testing"

// The delivery series' topics are capped as they are observed: the first
// MaxTopics seen keep a label of their own, the rest are summed as _other.
func TestDeliveryTopicsCapped(t *testing.T) {
	l := topicLabels{most: 2, named: map[string]bool{}}
	for _, tc := range []struct{ topic, want string }{
		{"a", "a"}, {"b", "b"}, {"c", Other}, {"a", "a"}, {"d", Other}, {"b", "b"},
	} {
		if got := l.of(tc.topic); got != tc.want {
			t.Errorf("of(%q) = %q, want %q", tc.topic, got, tc.want)
		}
	}
	none := topicLabels{most: 0, named: map[string]bool{}}
	if got := none.of("a"); got != Other {
		t.Errorf("max_topics 0: of(a) = %q", got)
	}
}
