package web

import (
	"testing"

	"github.com/gmq/gmq/job"
)

// TestEveryKindHasAStatus: a kind added to job.Kind gets an answer here, or
// this fails (a missing one would answer status 0).
func TestEveryKindHasAStatus(t *testing.T) {
	for _, k := range job.Kinds() {
		if statusOfKind[k] < 400 {
			t.Errorf("kind %s answers %d", k, statusOfKind[k])
		}
	}
}
