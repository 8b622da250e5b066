package pool

import "context"

// Fair groups live in the scripts (lua/lib_groups.lua); the pool only
// passes a job's group with its push and reads it back.

var unparkGroupsScript = newFunction("unpark_groups")

// UnparkGroups lets topic's parked groups back into its ring (its group
// settings changed) and says how many came back.
func (p *Pool) UnparkGroups(ctx context.Context, topic string) (int64, error) {
	n, err := unparkGroupsScript.Exec(ctx, p.client, p.keys.withTopics(p.keys.bucketOf(topic), topic), []string{p.opts.Origin, topic}).AsInt64()
	return n, wrapRedis("unpark groups", err)
}
