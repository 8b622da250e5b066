package memcache

import (
	"testing"

	"github.com/gmq/gmq/job"
)

// TestEveryKindHasAnAnswer: a kind added to job.Kind gets an answer here,
// or this fails (a missing one would answer an empty line).
func TestEveryKindHasAnAnswer(t *testing.T) {
	for _, k := range job.Kinds() {
		if answerOf[k].word == "" {
			t.Errorf("kind %s has no answer", k)
		}
	}
}
