package pool

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/redis/rueidis"

	"github.com/gmq/gmq/lua"
)

// A Redis can lose gmq's data while brokers run: restarted without AOF or
// RDB, or a failover to an empty replica. Two things then matter.
//
// Job numbers must not repeat, or a consumer's late ack of an old job would
// delete a new one with the same number. The id counter is lost with the
// rest, so a missing counter starts at a floor that grows with time
// (next_ids.lua), above anything the lost one handed out.
//
// The brokers must notice. gmq:meta holds an epoch, a random value written
// once with the record; a broker remembers the one it saw at Init, and
// EpochChanged tells when the record has gone or been made anew.

// The id floor starts at idFloorStart (2025-01-01 UTC, ms) and grows so that
// it reaches the largest number Lua's doubles hold exactly (2^53) at
// idFloorEnd (2100-01-01 UTC), whatever the bucket count: a job's number is
// its sequence number times the buckets plus its bucket.
const (
	idFloorStart = 1735689600000
	idFloorEnd   = 4102444800000
)

// idFloorRate is how many sequence numbers a millisecond the floor grows by
// with this many buckets: 237 with 16 (237,000 jobs a second, far above what
// one Redis stores), 3 with 1,024. A counter that grew faster on average
// since it started could be passed by a floor taken after a loss; such a
// deployment would run out of numbers before 2100 anyway.
func idFloorRate(buckets int) int64 {
	return max(1, (1<<53)/int64(buckets)/(idFloorEnd-idFloorStart))
}

var nextIDsScript = rueidis.NewLuaScript(lua.Source("next_ids"))

// initEpoch gives gmq:meta an epoch if it has none and remembers the one it
// has.
func (p *Pool) initEpoch(ctx context.Context) error {
	fresh, err := newEpoch()
	if err != nil {
		return fmt.Errorf("init: epoch: %w", err)
	}
	c := p.client
	res := c.DoMulti(ctx, // one round trip; a set-if-missing then a read of the same field is safe apart
		c.B().Hsetnx().Key(p.keys.meta()).Field("epoch").Value(fresh).Build(),
		c.B().Hget().Key(p.keys.meta()).Field("epoch").Build())
	if err := res[0].Error(); err != nil {
		return wrapRedis("init: epoch", err)
	}
	got, err := res[1].ToString()
	if err != nil {
		return wrapRedis("init: epoch", err)
	}
	p.epoch.Store(&got)
	return nil
}

// EpochChanged says whether the epoch an Announce read (the broker's
// regular look at gmq:meta) is no longer the one this pool saw at its last
// Init: the record has gone (Redis lost its data) or been made anew
// (another broker saw it gone first). Call Init to take the new one.
func (p *Pool) EpochChanged(a Announced) bool {
	known := p.epoch.Load()
	return known == nil || *known != a.Epoch
}

// Epoch is the epoch this pool saw at its last Init.
func (p *Pool) Epoch() string {
	if e := p.epoch.Load(); e != nil {
		return *e
	}
	return ""
}

func newEpoch() (string, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}
