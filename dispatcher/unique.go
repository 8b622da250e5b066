package dispatcher

import (
	"context"
	"time"

	"github.com/gmq/gmq/job"
)

// ReleaseUnique frees a topic's unique key before its window ends.
func (d *Dispatcher) ReleaseUnique(ctx context.Context, topic, key string) error {
	if err := d.allow("release unique key", writing); err != nil {
		return err
	}
	if err := job.ValidateTopic(topic); err != nil {
		return err
	}
	if err := (job.Unique{Key: key, For: time.Second, Mode: job.UniqueReject}).Check(); err != nil {
		return err
	}
	return d.pool.ReleaseUnique(ctx, topic, key)
}
