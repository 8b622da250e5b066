package pool

// Client ids: a job's alias (its client id -> its number), claimed before
// its push, dropped after its delete, and resolved for every call by id.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/gmq/gmq/job"
	"github.com/gmq/gmq/lua"
)

// claimAlias points a client id at member m. An alias whose job is live
// refuses the claim (ErrDuplicate): a 409 is said only when a job with that
// id exists. One whose job does not exist is a claim whose push has not run
// yet, or never will (the broker died between the two steps, or its caller
// gave up during a Redis stall and the claim ran late); it is waited on while
// younger than the grace (by Redis's clock, so a stall does not age it), then
// taken over. So a producer retrying a push that was cut off gets its job
// stored, not a 409 for a job that does not exist. The wait is bounded by ctx
// only: running out of it is a 503 (retry), never a 409.
func (p *Pool) claimAlias(ctx context.Context, cid, m string) error {
	key := []string{p.keys.aliases(p.keys.aliasBucket(cid))}
	stale := ""
	for range claimRounds {
		reply, err := claimAliasScript.Exec(ctx, p.client, key, lua.Args("claim_alias", "client_id", cid, "member", m, "stale", stale)).ToArray()
		if err != nil {
			return wrapRedis("push: claim id", err)
		}
		claim := decodeClaimAliasReply(reply)
		if claim.Status == replyOK {
			return nil
		}
		id, err := parseMember(claim.Member)
		if err != nil {
			return fmt.Errorf("push %q: alias: %w", cid, err)
		}
		if _, err := p.peekNumber(ctx, id); err == nil {
			return fmt.Errorf("push %q: %w", cid, job.ErrDuplicate)
		} else if !errors.Is(err, job.ErrNotFound) {
			return err
		}
		if age := time.Duration(claim.AgeMs) * time.Millisecond; age < p.opts.AliasGrace {
			select { // a push in flight: its job should appear shortly
			case <-ctx.Done():
				// Not Redis's silence (wrapRedis would say so): a claim without
				// its job yet, e.g. the first try's, run late after a stall.
				// Not settled yet, so retryable: ErrUnavailable, never a 409.
				return fmt.Errorf("push %q: %w: a push of this id is in flight and has not stored its job yet (settled within %v of its claim): %w",
					cid, job.ErrUnavailable, p.opts.AliasGrace, ctx.Err())
			case <-time.After(min(p.opts.AliasGrace-age, 50*time.Millisecond)):
			}
			continue
		}
		stale = claim.Member
	}
	return fmt.Errorf("push %q: %w: the id kept changing hands while claiming it", cid, job.ErrBusy)
}

// claimRounds bounds claimAlias's loop for a ctx with no deadline: enough
// rounds to wait out the grace in 50 ms steps several times over.
const claimRounds = 200

// dropAlias removes a deleted job's client id. It runs after the delete, in a
// second step (the alias lives in another slot). It is best-effort: the
// delete has happened whatever this step does, so its failure must not be
// reported as the delete's (a retried ack would then get a 404, and a job
// popped in the same call would be stranded). An alias left behind points at
// a gone job: it reads as not found, and the next push of that id takes it
// over at once (its claim is older than the grace). LeftAliases counts them.
func (p *Pool) dropAlias(ctx context.Context, cid string, id uint64) {
	if cid != "" {
		p.dropAliasList(ctx, []string{cid, member(id)})
	}
}

// dropAliases is dropAlias for the jobs a script removed, named in its reply
// as member, client id pairs: one script call per aliases bucket, not one
// per job.
func (p *Pool) dropAliases(ctx context.Context, pairs [][2]string) {
	list := make([]string, 0, 2*len(pairs))
	for _, pair := range pairs {
		if member, cid := pair[0], pair[1]; cid != "" {
			list = append(list, cid, member)
		}
	}
	p.dropAliasList(ctx, list)
}

// dropAck drops the client ids an ack's reply names: its job's (cid, ""
// when the job stays completed or had none) and those of the completed jobs
// its topic's max_completed dropped (dropped: member, client id pairs,
// space-separated).
func (p *Pool) dropAck(ctx context.Context, cid string, id uint64, dropped string) {
	list := []string{}
	if cid != "" {
		list = append(list, cid, member(id))
	}
	pairs := strings.Fields(dropped)
	for i := 0; i+1 < len(pairs); i += 2 {
		list = append(list, pairs[i+1], pairs[i])
	}
	if len(list) > 0 {
		p.dropAliasList(ctx, list)
	}
}

// dropAliasList drops client id, member pairs, grouped by the ids' buckets.
func (p *Pool) dropAliasList(ctx context.Context, list []string) {
	byBucket := map[int][]string{}
	for i := 0; i+1 < len(list); i += 2 {
		b := p.keys.aliasBucket(list[i])
		byBucket[b] = append(byBucket[b], list[i], list[i+1])
	}
	for b, args := range byBucket {
		if err := dropAliasScript.Exec(ctx, p.client, []string{p.keys.aliases(b)}, append(lua.Args("drop_alias"), args...)).Error(); err != nil {
			p.leftAliases.Add(int64(len(args) / 2))
		}
	}
}

// LeftAliases is how many client ids this pool could not drop after their
// job was deleted (Redis failed between the two steps). They are harmless
// (see dropAlias); the count shows how often it happened.
func (p *Pool) LeftAliases() int64 { return p.leftAliases.Load() }

// Resolve turns a public id (gmq's number or a client-supplied id) into the
// job's number: a client id is looked up in its alias hash (one HGET), a
// number costs nothing. Every operation on one job resolves its id so; the
// dispatcher does it first only to check a delivery's token against the id
// (and then passes the number on, which costs nothing again).
func (p *Pool) Resolve(ctx context.Context, public string) (uint64, error) {
	if job.IsNumber(public) {
		id, err := strconv.ParseUint(public, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("job %q: %w", public, job.ErrNotFound)
		}
		return id, nil
	}
	if job.ValidateClientID(public) != nil {
		return 0, fmt.Errorf("job %q: %w", public, job.ErrNotFound)
	}
	key := p.keys.aliases(p.keys.aliasBucket(public))
	cur, err := p.client.Do(ctx, p.client.B().Hget().Key(key).Field(public).Build()).ToString()
	if rueidis.IsRedisNil(err) {
		return 0, fmt.Errorf("job %q: %w", public, job.ErrNotFound)
	}
	if err != nil {
		return 0, wrapRedis("resolve id", err)
	}
	for i := 0; i < len(cur); i++ {
		if cur[i] == ':' {
			return parseMember(cur[:i])
		}
	}
	return 0, fmt.Errorf("job %q: bad alias %q", public, cur)
}
