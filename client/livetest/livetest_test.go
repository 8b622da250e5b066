// Package livetest_test runs the Go client (github.com/gmq/gmq/client, the
// module in ..) against a live broker: every call, the long polls past
// request_timeout, the token, the worker loop (Work) with its touches,
// failures, graceful stop and a worker killed mid-job, and the README's
// examples. It is a module of its own (go.mod says why); the client's own
// tests (..) cover what needs no broker (retries, timeouts) against
// scripted answers.
package livetest_test

import (
	"testing"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
)

func TestMain(m *testing.M) { brokertest.Main(m) }

// clientDir is the client module's folder, from this one.
const clientDir = ".."

// broker is a fresh broker with the test defaults.
func broker(t *testing.T) *brokertest.Broker {
	t.Helper()
	return brokertest.Fresh(t, nil)
}

// token is the [web] token of a broker from brokerWithToken.
const token = "s3cret-for-the-go-client-tests"

// brokerWithToken is a fresh broker that requires token on its API.
func brokerWithToken(t *testing.T, tweak func(*config.Config)) *brokertest.Broker {
	t.Helper()
	return brokertest.Fresh(t, func(c *config.Config) {
		c.Token = token
		if tweak != nil {
			tweak(c)
		}
	})
}
