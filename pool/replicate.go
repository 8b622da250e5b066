package pool

import (
	"context"
	"fmt"

	"github.com/redis/rueidis"

	"github.com/gmq/gmq/job"
)

// Replication is asynchronous: a master answers a write before its replicas
// have it, so a push answered to its producer can be lost if the master dies
// in that window and a replica takes over (measured in docs/PERFORMANCE.md).
// With Options.WaitReplicas set, a script call that stores pushes is followed
// by Redis's WAIT, and the pushes are answered only when enough replicas
// confirm them.
//
// WAIT counts the writes of its own connection, so it must follow the script
// on the same one. rueidis pipelines most commands over a shared connection,
// but a DoMulti that holds a blocking command (WAIT is one) runs whole on one
// connection taken from its pool for blocking calls; on a cluster, a command
// without a key goes with the other commands of its DoMulti, to the script's
// node. So waitClient sends each command of a script call as DoMulti(command,
// WAIT). What it costs (no shared pipeline, a round trip to the replicas) is
// in docs/PERFORMANCE.md.
//
// Left open: on a cluster, a script call redirected (MOVED, ASK) during a
// slot migration is run again on its new node alone, and the WAIT that
// answered was the old node's.

// waitClient is the pool's client for one script call whose writes must
// reach replicas: its Do sends WAIT after the command (FCALL, made again
// after the library was loaded when Redis did not have it) and keeps WAIT's
// answer.
type waitClient struct {
	rueidis.Client
	replicas, timeoutMillis int64

	confirmed int64 // replicas that hold the last command's writes
	err       error // WAIT's own error
}

func (p *Pool) newWaitClient() *waitClient {
	return &waitClient{Client: p.client, replicas: int64(p.opts.WaitReplicas), timeoutMillis: max(p.opts.WaitTimeout.Milliseconds(), 1)}
}

// Do runs cmd, then WAIT on the same connection.
func (c *waitClient) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	wait := c.Client.B().Wait().Numreplicas(c.replicas).Timeout(c.timeoutMillis).Build()
	res := c.Client.DoMulti(ctx, cmd, wait)
	c.confirmed, c.err = res[1].AsInt64()
	return res[0]
}

// shortfall says why the writes are not confirmed, or nil when they are.
func (c *waitClient) shortfall() error {
	if c.err != nil {
		return fmt.Errorf("%w: stored on the master, but waiting for %d replicas failed: %w",
			job.ErrUnavailable, c.replicas, c.err)
	}
	if c.confirmed < c.replicas {
		return fmt.Errorf("%w: stored on the master, but %d of the %d replicas wait_replicas asks for confirmed it within %d ms: "+
			"a failover now could lose it (a retry with the same client id will not store it twice)",
			job.ErrUnavailable, c.confirmed, c.replicas, c.timeoutMillis)
	}
	return nil
}
