package pool

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/gmq/gmq/lua"
)

// What gmq stores has a format, a number in gmq:meta ('format'). A broker
// reads the formats up to the one it was built for and writes the store's,
// and the store's format is raised only when every broker recorded reads
// the new one (announce.lua): a rolling upgrade never puts a record in
// front of a broker that cannot read it. A broker records itself at Init
// and then every status poll (Announce); a record lasts AnnounceTTL, so a
// broker that stopped without a word holds a raise back for that long.
//
// Brokers of gmq 0.1.0 as released record nothing: stop them before a
// broker of a newer format starts (docs/operations.md, "Upgrades").

// StoreFormat is the newest store format this build reads and writes.
//   - 1, the store of gmq 0.1: a record (the F_* fields of lua/contract.go)
//     in the bucket's jobs hash, its body in the bodies hash.
//   - 2: a body of up to 4 KiB in its record (F_BODY; lib.lua jobbody), a
//     longer one in the bodies hash: a pending job of 100 bytes takes ~70
//     bytes less, and a push, a pop and an ack a command less each. A broker
//     reads both; once the store is raised to 2, migrate.lua moves format 1's
//     bodies into their records (migrate.go).
//   - 3: a job may end completed (job.Completed: its topic's completed set,
//     F_ENDED_AT, F_RESULT; lua/lib_outcomes.lua) and carry its own
//     keep_completed (F_KEEP). An older broker would not know the state, so
//     an ack completes a job only once the store is at 3; nothing stored
//     before changes (its migration is format 2's pass, which finds no
//     body left to move once that one has run).
//   - 4: an ack may carry follow-ups, kept in its bucket until its timer
//     pushes them (followups.go): an older broker's timer would not, so an
//     ack with follow-ups is refused (job.ErrBusy) until the store is at 4.
//     Nothing stored before changes.
//   - 5: a job may wait for others (job.Waiting: its topic's after set,
//     F_AFTER), and a job others wait for tells them of its end (F_DEPENDENTS,
//     notices among its bucket's follow-ups; deps.go): an older broker would
//     end it without a word, so a push with after is refused (job.ErrBusy)
//     until the store is at 5. Nothing stored before changes.
//   - 6: a job may belong to a batch (F_BATCH; batches.go), whose end
//     tells its batch (a notice among its bucket's follow-ups): an older
//     broker would end it without a word, so batches are refused
//     (job.ErrBusy) until the store is at 6. Nothing stored before changes.
const StoreFormat = 6

// DefaultAnnounceTTL is how long a broker's record lasts unless renewed.
const DefaultAnnounceTTL = 15 * time.Second

// ErrStoreTooNew is the error of a broker that meets a store whose format
// is newer than it reads.
var ErrStoreTooNew = errors.New("the store's format is newer than this broker reads")

var announceScript = rueidis.NewLuaScript(lua.Source("announce"))

// Announced is what Announce learnt: the store's format, its epoch ("":
// none, epoch.go), and the brokers recorded that read only older ones
// (which hold a raise back).
type Announced struct {
	Store  int
	Epoch  string
	Behind []string
}

// reads is the newest format this pool reads (Options.ReadsFormat, for
// tests that play a newer broker; StoreFormat otherwise).
func (p *Pool) reads() int {
	if p.opts.ReadsFormat > 0 {
		return p.opts.ReadsFormat
	}
	return StoreFormat
}

// Announce records this broker (its origin, the newest format it reads,
// its version) for AnnounceTTL and raises the store's format to the newest
// every recorded broker reads. On a store newer than it reads it records
// nothing, and the pool refuses every call after (ErrStoreTooNew).
func (p *Pool) Announce(ctx context.Context) (Announced, error) {
	ttl := p.opts.AnnounceTTL
	if ttl <= 0 {
		ttl = DefaultAnnounceTTL
	}
	c := p.client.(guardedClient).Client // the guard's own check must pass it
	got, err := announceScript.Exec(ctx, c, []string{p.keys.meta()},
		lua.Args("announce", "origin", p.opts.Origin, "reads", strconv.Itoa(p.reads()),
			"ttl", strconv.FormatInt(ttl.Milliseconds(), 10), "version", p.opts.Version)).ToArray()
	if err != nil {
		return Announced{}, wrapRedis("announce", err)
	}
	announced := decodeAnnounceReply(got)
	if announced.Values < 2 {
		return Announced{}, fmt.Errorf("announce: reply of %d values", announced.Values)
	}
	store, recorded := announced.Format, announced.Recorded
	f := Announced{Store: int(store), Epoch: announced.Epoch, Behind: announced.Behind}
	if recorded == 0 {
		p.guard.tooNew.Store(store)
		return f, p.tooNewError(int(store))
	}
	p.guard.tooNew.Store(0)
	if p.format.Swap(store) != store {
		caller := p.opts.Origin
		if store > 1 {
			caller += "/" + strconv.FormatInt(store, 10)
		}
		p.callerArg.Store(&caller)
	}
	return f, nil
}

// Format is the store's format as this pool last read it (Announce): the
// one its scripts write.
func (p *Pool) Format() int { return int(p.format.Load()) }

// caller is ARGV[1] of a topic-scoped script: the origin, and the format
// the call writes when it is over 1 ("host-1-ab/2": lib.lua begin).
// It is made once a format (Announce), not at every call.
func (p *Pool) caller() string {
	if c := p.callerArg.Load(); c != nil {
		return *c
	}
	return p.opts.Origin
}

// Retire removes this broker's records (a clean stop), so that it does not
// hold a raise of the format back for AnnounceTTL, nor show in the status.
func (p *Pool) Retire(ctx context.Context) error {
	c := p.client.(guardedClient).Client
	err := wrapRedis("retire", c.Do(ctx, c.B().Hdel().Key(p.keys.meta()).Field("broker "+p.opts.Origin).Build()).Error())
	return errors.Join(err, p.retireStatus(ctx))
}

func (p *Pool) tooNewError(store int) error {
	version := p.opts.Version
	if version == "" {
		version = "this build"
	}
	return fmt.Errorf("%w: this Redis holds gmq data in store format %d; this broker (gmq %s) reads formats up to %d: "+
		"upgrade the broker (docs/operations.md, \"Upgrades\"), or use another [redis] prefix", ErrStoreTooNew, store, version, p.reads())
}

// formatGuard is what a guardedClient checks: the store's format when it is
// newer than the pool reads, 0 otherwise.
type formatGuard struct{ tooNew atomic.Int64 }

// guardedClient refuses every command while the store is newer than its
// pool reads: a broker that was paused while a newer one raised the format
// (its record lapsed) must not read the new records or write old ones.
type guardedClient struct {
	rueidis.Client
	p *Pool
}

func (g guardedClient) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	if store := g.p.guard.tooNew.Load(); store != 0 {
		return rueidis.NewErrorResult(g.p.tooNewError(int(store)))
	}
	return g.Client.Do(ctx, cmd)
}

func (g guardedClient) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	if store := g.p.guard.tooNew.Load(); store != 0 {
		out := make([]rueidis.RedisResult, len(cmds))
		for i := range out {
			out[i] = rueidis.NewErrorResult(g.p.tooNewError(int(store)))
		}
		return out
	}
	return g.Client.DoMulti(ctx, cmds...)
}
