package pool

import (
	"context"
	"errors"
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
	if len(got) < 4 || (len(got)-4)%4 != 0 {
		return StatusRead{}, fmt.Errorf("read status: a reply of %d values", len(got))
	}
	now, err := got[0].AsInt64()
	if err != nil {
		return StatusRead{}, fmt.Errorf("read status: %w", err)
	}
	out := StatusRead{Now: time.UnixMilli(now), Brokers: make(map[string]job.StatusLayer, (len(got)-4)/4)}
	if out.Fleet, err = statusLayer(got[1:4]); err != nil {
		return StatusRead{}, fmt.Errorf("read status: the fleet's: %w", err)
	}
	for i := 4; i < len(got); i += 4 {
		name, err := got[i].ToString()
		if err != nil {
			return StatusRead{}, fmt.Errorf("read status: %w", err)
		}
		if out.Brokers[name], err = statusLayer(got[i+1 : i+4]); err != nil {
			return StatusRead{}, fmt.Errorf("read status: broker %s's: %w", name, err)
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
	status := ""
	if len(got) > 0 {
		status, _ = got[0].ToString()
	}
	switch {
	case status == replyNotFound:
		return job.StatusLayer{}, time.Time{}, fmt.Errorf("set status: %w: no broker %q on this Redis (GET /api/v1/status lists them)", job.ErrNotFound, scope.Broker)
	case status == replyState && len(got) == 3:
		next, _ := got[1].ToString()
		at, _ := got[2].AsInt64()
		return job.StatusLayer{}, time.Time{}, fmt.Errorf("set status %s: %w: %s is enforced at %s; set a looser status, or wait",
			s, job.ErrStatusPending, next, time.UnixMilli(at).UTC().Format("2006-01-02T15:04:05.000Z07:00"))
	case status != replyOK || len(got) != 5:
		return job.StatusLayer{}, time.Time{}, fmt.Errorf("set status: an unexpected reply %q of %d values", status, len(got))
	}
	now, err := got[1].AsInt64()
	if err != nil {
		return job.StatusLayer{}, time.Time{}, fmt.Errorf("set status: %w", err)
	}
	layer, err := statusLayer(got[2:5])
	return layer, time.UnixMilli(now), err
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
func statusLayer(v []rueidis.RedisMessage) (job.StatusLayer, error) {
	now, err1 := v[0].ToString()
	next, err2 := v[1].ToString()
	at, err3 := v[2].AsInt64()
	if err := errors.Join(err1, err2, err3); err != nil {
		return job.StatusLayer{}, err
	}
	l := job.StatusLayer{}
	if l.Now, err1 = job.ParseStatus(now); err1 != nil {
		return l, err1
	}
	if l.Next, err2 = job.ParseStatus(next); err2 != nil {
		return l, err2
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
