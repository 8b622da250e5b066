// Package chaos holds system tests of gmq run as a process. Chaos and crash tests: brokers SIGKILLed, Redis restarted, frozen or emptied under load, and no job lost (make chaos runs the long version).
package chaos

import (
	"testing"

	"github.com/gmq/gmq/systemtest/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }
