package pool

import (
	"context"
	"fmt"
	"strconv"
)

// Fair groups live in the scripts (lua/lib_groups.lua); the pool only
// passes a job's group with its push and reads it back.

var unparkGroupsScript = newFunction("unpark_groups")

// unparkStep is the most parked groups one call of unpark_groups looks at:
// a step of a few milliseconds of Redis's time, as a flush's is.
const unparkStep = 1000

// UnparkGroups lets topic's parked groups back into its ring (its group
// settings changed), a bounded step a call, and says how many came back.
// Groups a pop parks meanwhile come back too: they were parked under the
// new settings, and are parked again at their next turn if they must be.
func (p *Pool) UnparkGroups(ctx context.Context, topic string) (int64, error) {
	keys := p.keys.withTopics(p.keys.bucketOf(topic), topic)
	args := unparkGroupsScript.args(p.caller(), "", "topic", topic, "n", strconv.Itoa(unparkStep))
	var back int64
	for {
		step, err := unparkGroupsScript.Exec(ctx, p.client, keys, args).AsIntSlice()
		if err != nil {
			return back, wrapRedis("unpark groups", err)
		}
		if len(step) != 2 {
			return back, fmt.Errorf("unpark groups: reply %v", step)
		}
		back += step[0]
		if step[1] < unparkStep {
			return back, nil
		}
	}
}
