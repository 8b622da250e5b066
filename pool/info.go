package pool

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/gmq/gmq/job"
)

// Info reads Redis's memory use and times a round trip.
func (p *Pool) Info(ctx context.Context) (job.RedisInfo, error) {
	start := time.Now()
	if err := p.Ping(ctx); err != nil {
		return job.RedisInfo{}, err
	}
	info := job.RedisInfo{RTT: time.Since(start)}
	text, err := p.client.Do(ctx, p.client.B().Info().Section("memory", "server").Build()).ToString()
	if err != nil {
		return info, wrapRedis("info", err)
	}
	for _, line := range strings.Split(text, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		switch {
		case !ok:
		case k == "used_memory":
			info.UsedMemory, _ = strconv.ParseInt(v, 10, 64) // a malformed line leaves 0, shown as unknown
		case k == "redis_version":
			info.Version = v
		}
	}
	return info, nil
}
