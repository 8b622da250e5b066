package serverset_test

import (
	"testing"
	"time"

	"github.com/gmq/gmq/broker/brokertest"
	"github.com/gmq/gmq/config"
	"github.com/gmq/gmq/internal/redistest"
	"github.com/gmq/gmq/job"
	"github.com/gmq/gmq/serverset"
)

// Two brokers on one Redis with [zookeeper] and a status grace, their
// server sets read by kazoo: each joins both sets at boot; a stricter fleet
// status is seen in ZooKeeper as soon as it is announced, before it is
// enforced; a looser one at once; a broker's own status moves only it; a
// broker that stops leaves at once.
func TestBrokersInServerSets(t *testing.T) {
	zk := serverset.SharedZooKeeperAddr(t)
	const prefix, grace = "/gmq-test/brokers", time.Hour // a grace no test outlasts: what ZooKeeper shows is the announced status
	srv := redistest.Start(t)
	tweak := func(c *config.Config) {
		c.ZooKeeperHosts, c.ZooKeeperPathPrefix, c.ZooKeeperAdvertiseHost = []string{zk}, prefix, "127.0.0.1"
		c.ZooKeeperSessionTimeout, c.StatusGrace, c.ShutdownTimeout = 10*time.Second, grace, 100*time.Millisecond
	}
	a := brokertest.Start(t, srv, tweak)
	b := brokertest.Start(t, srv, tweak)
	members := serverset.WatchMembers(t, zk, prefix)
	members.WaitFor(t, "both brokers in both sets", 2, 2)

	if err := a.Dispatcher.Status().Set(t.Context(), job.ReadOnly); err != nil {
		t.Fatal(err)
	}
	members.WaitFor(t, "a readonly fleet out of the write set, announced before its grace ends", 0, 2)
	if a.Dispatcher.Status().Enforced() != job.Up {
		t.Fatalf("enforced %v during the grace", a.Dispatcher.Status().Enforced())
	}
	if err := b.Dispatcher.Status().Set(t.Context(), job.Up); err != nil {
		t.Fatal(err)
	}
	members.WaitFor(t, "the fleet up again, at once", 2, 2)

	if err := a.Dispatcher.Status().SetBroker(t.Context(), b.Pool.Origin(), job.Quiescent); err != nil {
		t.Fatal(err)
	}
	members.WaitFor(t, "the quiescent broker in neither set", 1, 1)
	if err := a.Dispatcher.Status().SetBroker(t.Context(), b.Pool.Origin(), job.Up); err != nil {
		t.Fatal(err)
	}
	members.WaitFor(t, "both back", 2, 2)
	b.Broker.Quiet() // SIGTSTP's
	members.WaitFor(t, "a quiet broker in neither set", 1, 1)
}
