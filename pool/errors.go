package pool

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/rueidis"

	"github.com/gmq/gmq/job"
)

// unavailableReplies are Redis error replies that mean "not serving now".
var unavailableReplies = []string{"LOADING", "BUSY", "MASTERDOWN", "TRYAGAIN", "CLUSTERDOWN", "READONLY"}

// wrapRedis gives a Redis call's error its context and classifies it: network
// failures and not-serving replies become job.ErrUnavailable.
func wrapRedis(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, job.ErrUnavailable) {
		return fmt.Errorf("%s: %w", op, err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w: no answer before the request's deadline: %w", op, job.ErrUnavailable, err)
	}
	if re, ok := rueidis.IsRedisErr(err); ok {
		msg := re.Error()
		if strings.HasPrefix(msg, "OOM") {
			return fmt.Errorf("%s: %w (maxmemory): %w", op, job.ErrOutOfMemory, err)
		}
		for _, prefix := range unavailableReplies {
			if strings.HasPrefix(msg, prefix) {
				return fmt.Errorf("%s: %w: %w", op, job.ErrUnavailable, err)
			}
		}
		return fmt.Errorf("%s: redis: %w", op, err)
	}
	return fmt.Errorf("%s: %w: %w", op, job.ErrUnavailable, err)
}
