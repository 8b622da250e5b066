// Package protocols holds system tests of gmq run as a process. Every protocol's answers checked against one table (conformance), and brokers under hostile clients.
package protocols

import (
	"testing"

	"github.com/gmq/gmq/systemtest/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }
