package pool

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/gmq/gmq/job"
	"github.com/gmq/gmq/lua"
)

// The server status has two layers in the store (lua/status.lua): the
// fleet's, which every broker sharing the Redis obeys (gmq:status, read
// and set by brokers of every version), and each broker's own; a broker
// obeys the stricter. Either may hold a stricter status pending until the
// end of its grace period, timed on Redis's clock.

var statusScript = rueidis.NewLuaScript(lua.Source("status"))

// StatusRead is the status as one read of the store found it.
type StatusRead struct {
	Now     time.Time // Redis's clock when read: the layers' At are on it
	Fleet   job.StatusLayer
	Brokers map[string]job.StatusLayer // by origin, this broker's included
}

// Status reads the fleet's status and every broker's, and renews this
// broker's record (for AnnounceTTL); mine is this broker's layer as it
// knows it, which recreates a record lost while Redis was out of reach.
func (p *Pool) Status(ctx context.Context, mine job.StatusLayer) (StatusRead, error) {
	got, err := statusScript.Exec(ctx, p.client, p.statusKeys(), lua.Args("status read", "origin", p.opts.Origin,
		"ttl", p.announceTTLms(), "now", mine.Now.String(), "next", mine.Next.String(), "at", msText(mine.At))).ToArray()
	if err != nil {
		return StatusRead{}, wrapRedis("read status", err)
	}
	read := decodeStatusReadReply(got)
	if read.Values < 4 || (read.Values-4)%4 != 0 {
		return StatusRead{}, fmt.Errorf("read status: a reply of %d values", read.Values)
	}
	out := StatusRead{Now: time.UnixMilli(read.Now), Brokers: make(map[string]job.StatusLayer, len(read.Brokers))}
	if out.Fleet, err = statusLayer(read.FleetNow, read.FleetNext, read.FleetAt); err != nil {
		return StatusRead{}, fmt.Errorf("read status: the fleet's: %w", err)
	}
	for _, broker := range read.Brokers {
		if out.Brokers[broker.Name], err = statusLayer(broker.Now, broker.Next, broker.At); err != nil {
			return StatusRead{}, fmt.Errorf("read status: broker %s's: %w", broker.Name, err)
		}
	}
	return out, nil
}

// A StatusScope says whose status a set changes.
type StatusScope struct {
	// Broker is the origin of the broker whose own status is set; "": the
	// fleet's.
	Broker string
	// Create records the broker when it has no record (its status at boot);
	// otherwise a broker without one is not found.
	Create bool
}

// SetStatus sets the fleet's status or a broker's (scope) to s, at once
// when s is as strict as the status obeyed now or looser, else after
// grace (announced at once). It returns the layer set and Redis's time;
// job.ErrStatusPending when a stricter status is asked while another
// stricter one waits out its grace, job.ErrNotFound for a broker with no
// record.
func (p *Pool) SetStatus(ctx context.Context, scope StatusScope, s job.Status, grace time.Duration) (job.StatusLayer, time.Time, error) {
	which, create := "fleet", "0"
	if scope.Broker != "" {
		which = "broker"
	}
	if scope.Create {
		create = "1"
	}
	got, err := statusScript.Exec(ctx, p.client, p.statusKeys(), lua.Args("status set", "scope", which, "origin", scope.Broker,
		"status", s.String(), "grace", strconv.FormatInt(grace.Milliseconds(), 10), "ttl", p.announceTTLms(), "create", create)).ToArray()
	if err != nil {
		return job.StatusLayer{}, time.Time{}, wrapRedis("set status", err)
	}
	set := decodeStatusSetReply(got)
	switch {
	case set.Status == replyNotFound:
		return job.StatusLayer{}, time.Time{}, fmt.Errorf("set status: %w: no broker %q on this Redis (GET /api/v1/status lists them)", job.ErrNotFound, scope.Broker)
	case set.Status == replyState && set.Values == 3:
		return job.StatusLayer{}, time.Time{}, fmt.Errorf("set status %s: %w: %s is enforced at %s; set a looser status, or wait",
			s, job.ErrStatusPending, set.Next, time.UnixMilli(set.At).UTC().Format("2006-01-02T15:04:05.000Z07:00"))
	case set.Status != replyOK || set.Values != 5:
		return job.StatusLayer{}, time.Time{}, fmt.Errorf("set status: an unexpected reply %q of %d values", set.Status, set.Values)
	}
	layer, err := statusLayer(set.LayerNow, set.LayerNext, set.LayerAt)
	return layer, time.UnixMilli(set.Now), err
}

// LegacyStatus reads the fleet's status as brokers before the grace
// period read it (gmq:status alone), for tests that play one.
func (p *Pool) LegacyStatus(ctx context.Context) (job.Status, error) {
	v, err := p.client.Do(ctx, p.client.B().Get().Key(p.keys.status()).Build()).ToString()
	if rueidis.IsRedisNil(err) || v == "" {
		return job.Up, nil
	}
	if err != nil {
		return job.Up, wrapRedis("read status", err)
	}
	return job.ParseStatus(v)
}

// statusKeys are status.lua's KEYS: the fleet's status, its pending change
// and the brokers' layers. The last two carry the first's name as their
// hash tag, so that all three share its slot on a Cluster, after the
// prefix, so that an ACL of the prefix's keys (~gmq:*) covers them.
func (p *Pool) statusKeys() []string {
	tag := p.keys.prefix + ":{" + p.keys.status() + "}"
	return []string{p.keys.status(), tag + ":next", tag + ":brokers"}
}

// retireStatus removes this broker's status record (a clean stop).
func (p *Pool) retireStatus(ctx context.Context) error {
	c := p.client.(guardedClient).Client
	return wrapRedis("retire status", c.Do(ctx, c.B().Hdel().Key(p.statusKeys()[2]).Field(p.opts.Origin).Build()).Error())
}

func (p *Pool) announceTTLms() string {
	ttl := p.opts.AnnounceTTL
	if ttl <= 0 {
		ttl = DefaultAnnounceTTL
	}
	return strconv.FormatInt(ttl.Milliseconds(), 10)
}

// statusLayer reads a reply's now, next and at (ms, 0: none).
func statusLayer(now, next string, at int64) (job.StatusLayer, error) {
	var err error
	l := job.StatusLayer{}
	if l.Now, err = job.ParseStatus(now); err != nil {
		return l, err
	}
	if l.Next, err = job.ParseStatus(next); err != nil {
		return l, err
	}
	if at > 0 {
		l.At = time.UnixMilli(at)
	}
	return l, nil
}

func msText(t time.Time) string {
	if t.IsZero() {
		return "0"
	}
	return strconv.FormatInt(t.UnixMilli(), 10)
}

// Origin is this broker's name in the store (Options.Origin).
func (p *Pool) Origin() string { return p.opts.Origin }
