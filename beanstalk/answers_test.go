package beanstalk

import (
	"strings"
	"testing"

	"github.com/gmq/gmq/job"
)

// TestEveryKindHasAnAnswer: a kind added to job.Kind gets an answer here,
// or this fails (a missing one would answer nothing at all).
func TestEveryKindHasAnAnswer(t *testing.T) {
	for _, k := range job.Kinds() {
		if a := answerOf[k]; !strings.HasSuffix(a, "\r\n") {
			t.Errorf("kind %s answers %q", k, a)
		}
	}
}
