package pool

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/rueidis"
)

// Store format 2 keeps a short body in its record (format.go). A store
// raised from 1 still holds format 1's bodies in each bucket's bodies hash;
// they are read there until migrate.lua moves them, a bounded step at a
// time, each step one script. When every bucket has had a whole pass,
// gmq:meta's 'migrated' says so and the brokers stop.

var migrateScript = newFunction("migrate")

// migrateStep is about how many bodies one step looks at: a step of a few
// milliseconds of Redis's time.
const migrateStep = 1000

// MigrateStep moves up to about migrateStep of bucket b's short bodies into
// their records, going on from cursor ("0" starts a pass over the bucket).
// It returns the next cursor ("0": the pass is over) and how many it moved.
func (p *Pool) MigrateStep(ctx context.Context, b int, cursor string) (string, int64, error) {
	r, err := migrateScript.Exec(ctx, p.client, p.keys.bucket(b), migrateScript.args(p.caller(), "", "cursor", cursor, "n", strconv.Itoa(migrateStep))).ToArray()
	if err != nil {
		return cursor, 0, wrapRedis("migrate", err)
	}
	migrated := decodeMigrateReply(r)
	if migrated.Values != 2 || migrated.Cursor == "" {
		return cursor, 0, fmt.Errorf("migrate: reply %v", r)
	}
	return migrated.Cursor, migrated.Moved, nil
}

// Migrated is the store format whose migration has ended (gmq:meta's
// 'migrated'; 1 when none has run).
func (p *Pool) Migrated(ctx context.Context) (int, error) {
	v, err := p.client.Do(ctx, p.client.B().Hget().Key(p.keys.meta()).Field("migrated").Build()).AsInt64()
	if rueidis.IsRedisNil(err) {
		return 1, nil
	}
	if err != nil {
		return 0, wrapRedis("read the migrated format", err)
	}
	return int(v), nil
}

// SetMigrated records that the migration to format f has ended.
func (p *Pool) SetMigrated(ctx context.Context, f int) error {
	return wrapRedis("record the migrated format",
		p.client.Do(ctx, p.client.B().Hset().Key(p.keys.meta()).FieldValue().FieldValue("migrated", strconv.Itoa(f)).Build()).Error())
}
