// Package brokers holds system tests of gmq run as a process. Features end to end across several brokers on one Redis: flow control, groups, unique jobs, schedules, status, batches, dependencies, follow-ups.
package brokers

import (
	"testing"

	"github.com/gmq/gmq/systemtest/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }
