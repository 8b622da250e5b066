// Package upgrade holds system tests of gmq run as a process. Two versions side by side: an older commit's broker (built from this clone's history) beside this tree's on one Redis, through each store format's upgrade.
package upgrade

import (
	"testing"

	"github.com/gmq/gmq/systemtest/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }
