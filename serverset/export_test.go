package serverset

import "testing"

// For the tests of package serverset_test, which run whole brokers (package
// broker imports serverset, so they cannot be in package serverset).

// SharedZooKeeperAddr is the address of the tests' shared ZooKeeper.
func SharedZooKeeperAddr(tb testing.TB) string { return sharedZooKeeper(tb).Addr }

// Members reads a prefix's sets through kazoo, a client that is not ours.
type Members struct{ k *kazoo }

// WatchMembers starts a kazoo reader of prefix's sets (stopped at the test's end).
func WatchMembers(tb testing.TB, hosts, prefix string) *Members {
	return &Members{k: startKazoo(tb, hosts, prefix)}
}

// WaitFor waits until the sets hold write and read members.
func (m *Members) WaitFor(tb testing.TB, what string, write, read int) {
	tb.Helper()
	m.k.waitFor(tb, what, counts(write, read))
}
