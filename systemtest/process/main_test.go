// Package process holds system tests of gmq run as a process. The broker as a process: signals, limits, reloads, secrets in its logs, make run and the systemd unit.
package process

import (
	"testing"

	"github.com/gmq/gmq/systemtest/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }
