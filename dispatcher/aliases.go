package dispatcher

import (
	"context"
	"fmt"
	"time"

	"github.com/gmq/gmq/job"
	"github.com/gmq/gmq/pool"
)

// SetAliases replaces the topic aliases (conf.ini's [alias.NAME]: at start
// and at reload). An alias only takes pushes: a push to it is a push to each
// of its destinations; a pop from it finds it empty; a flush or delete of it
// is ignored (kestrel's queue aliases). The map is not changed after.
func (d *Dispatcher) SetAliases(aliases map[string][]string) {
	if len(aliases) == 0 {
		aliases = nil
	}
	d.aliases.Store(&aliases)
}

// alias returns the destinations of an alias, or ok false for a topic.
func (d *Dispatcher) alias(name string) (dests []string, ok bool) {
	m := d.aliases.Load()
	if m == nil || *m == nil {
		return nil, false
	}
	dests, ok = (*m)[name]
	return dests, ok
}

// Aliases lists the aliases and their destinations (for status pages).
func (d *Dispatcher) Aliases() map[string][]string {
	if m := d.aliases.Load(); m != nil {
		return *m
	}
	return nil
}

// pushAlias pushes j to each of its alias's destinations and returns the
// first one's id. Each is its own push, in the destinations' order (they may
// live in different buckets): one that fails stops the rest and is the
// error, and the copies pushed before it stay. A client id is refused: one
// id cannot name several jobs.
func (d *Dispatcher) pushAlias(ctx context.Context, j job.Spec, dests []string) (uint64, error) {
	if j.ClientID != "" {
		return 0, fmt.Errorf("%w: %q is an alias of %d topics: a push to it cannot carry an id", job.ErrInvalid, j.Topic, len(dests))
	}
	var first uint64
	for i, dest := range dests {
		copy := j
		copy.Topic = dest
		got, err := d.pool.Push(ctx, copy)
		if err != nil {
			return first, fmt.Errorf("alias %q: destination %q: %w", j.Topic, dest, err)
		}
		d.pushed(copy, got)
		if i == 0 {
			first = got.ID
		}
	}
	return first, nil
}

// pushEach is PushBatch for a batch that names an alias: each job is pushed
// on its own, in order (an alias's copies cannot share one bucket's script
// calls). A failure stops the batch; the ids of the jobs pushed before it
// come back with it, 0 for the others.
func (d *Dispatcher) pushEach(ctx context.Context, jobs []job.Spec) ([]uint64, error) {
	ids := make([]uint64, len(jobs))
	for i, j := range jobs {
		var err error
		if dests, ok := d.alias(j.Topic); ok {
			ids[i], err = d.pushAlias(ctx, j, dests)
		} else {
			var got pool.Pushed
			if got, err = d.pool.Push(ctx, j); err == nil {
				d.pushed(j, got)
				ids[i] = got.ID
			}
		}
		if err != nil {
			return ids, fmt.Errorf("job %d: %w", i, err)
		}
	}
	return ids, nil
}

// withoutAliases drops the aliases from a consumer's topics: a pop finds an
// alias empty.
func (d *Dispatcher) withoutAliases(topics []string) []string {
	if m := d.aliases.Load(); m == nil || *m == nil {
		return topics
	}
	out := topics[:0:0]
	for _, t := range topics {
		if _, ok := d.alias(t); !ok {
			out = append(out, t)
		}
	}
	return out
}

// waitOut is a pop from aliases only: nothing ever comes, so it waits its
// timeout (or until ctx ends) and finds nothing, as a pop of an empty topic.
func waitOut(ctx context.Context, timeout time.Duration) error {
	if timeout <= 0 {
		return nil
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
