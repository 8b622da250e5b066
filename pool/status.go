package pool

import (
	"context"

	"github.com/redis/rueidis"

	"github.com/gmq/gmq/job"
)

// Status reads the server status every broker sharing this Redis obeys (Up
// when none was set).
func (p *Pool) Status(ctx context.Context) (job.Status, error) {
	v, err := p.client.Do(ctx, p.client.B().Get().Key(p.keys.status()).Build()).ToString()
	if rueidis.IsRedisNil(err) {
		return job.Up, nil
	}
	if err != nil {
		return job.Up, wrapRedis("read status", err)
	}
	return job.ParseStatus(v)
}

// SetStatus sets the server status of every broker sharing this Redis.
func (p *Pool) SetStatus(ctx context.Context, s job.Status) error {
	return wrapRedis("set status", p.client.Do(ctx, p.client.B().Set().Key(p.keys.status()).Value(s.String()).Build()).Error())
}
