package pool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/gmq/gmq/job"
)

// batchDeadShown is the most dead members a batch's view lists.
const batchDeadShown = 100

// Batch reads batch id as it stands (job.ErrNotFound: none, or removed
// past its retention).
func (p *Pool) Batch(ctx context.Context, id uint64) (job.Batch, error) {
	return p.readBatch(id, p.client.DoMulti(ctx, p.batchReads(id, true)...))
}

// batchReads are the commands that read batch id: its hash, its members'
// and ends' counts, and (dead) the first of its dead members' errors.
func (p *Pool) batchReads(id uint64, dead bool) rueidis.Commands {
	k := p.keys.batch(p.batchBucket(id), id)
	cmds := rueidis.Commands{
		p.client.B().Hgetall().Key(k[0]).Build(),
		p.client.B().Scard().Key(k[1]).Build(),
		p.client.B().Hlen().Key(k[2]).Build(),
	}
	if dead {
		cmds = append(cmds, p.client.B().Hscan().Key(k[3]).Cursor(0).Count(batchDeadShown).Build())
	}
	return cmds
}

// readBatch is batch id from the replies of its batchReads.
func (p *Pool) readBatch(id uint64, replies []rueidis.RedisResult) (job.Batch, error) {
	for _, r := range replies {
		if err := r.Error(); err != nil {
			return job.Batch{}, wrapRedis("read batch", err)
		}
	}
	h, _ := replies[0].AsStrMap()
	if len(h) == 0 {
		return job.Batch{}, fmt.Errorf("batch %d: %w", id, job.ErrNotFound)
	}
	total, _ := replies[1].AsInt64()
	ended, _ := replies[2].AsInt64()
	num := func(f string) int64 { n, _ := strconv.ParseInt(h[f], 10, 64); return n }
	b := job.Batch{ID: id, State: h["state"], Total: total, Pending: total - ended,
		Completed: num("completed"), Dead: num("dead"), Removed: num("removed"),
		Created: time.UnixMilli(num("created")), WithResults: h["with_results"] == "1"}
	if f := num("finished"); f > 0 {
		b.Finished = time.UnixMilli(f)
	}
	if h["meta"] != "" {
		b.Meta = json.RawMessage(h["meta"])
	}
	for _, name := range []string{"on_complete", "on_success", "on_death"} {
		var entries [][2]string
		if json.Unmarshal([]byte(h[name]), &entries) == nil && len(entries) == 1 {
			if n, err := parseMember(entries[0][0]); err == nil {
				if b.Callbacks == nil {
					b.Callbacks = map[string]uint64{}
				}
				b.Callbacks[name] = n
			}
		}
	}
	if len(replies) < 4 {
		return b, nil
	}
	if scan, err := replies[3].AsScanEntry(); err == nil {
		for i := 0; i+1 < len(scan.Elements) && len(b.DeadMembers) < batchDeadShown; i += 2 {
			if n, err := parseMember(scan.Elements[i]); err == nil {
				if b.DeadMembers == nil {
					b.DeadMembers = map[uint64]string{}
				}
				b.DeadMembers[n] = scan.Elements[i+1]
			}
		}
	}
	return b, nil
}

// sweepBatches does one round of bucket b's batch sweep (batchesDue): it
// removes finished batches past their retention and looks for the jobs of
// members listed but unstored past batchPushWithin (a crash between
// listing and pushing them): one that is there is marked stored, one
// that is not is dropped from its batch, which may finish it.
func (p *Pool) sweepBatches(ctx context.Context, b int) (map[string]int, bool, error) {
	keys := append(p.keys.withTopics(b), p.keys.batch(b, uint64(b))...)
	call := func(mode string, named ...string) ([]rueidis.RedisMessage, error) {
		args := batchesScript.args(p.caller(), mode, append([]string{"id", strconv.Itoa(b)}, named...)...)
		return batchesScript.Exec(ctx, p.client, keys, args).ToArray()
	}
	r, err := call("sweep", "n", strconv.Itoa(batchSweepBatch))
	if err != nil {
		return nil, false, wrapRedis("sweep batches", err)
	}
	swept := decodeBatchesSweepReply(r)
	done, unstored := swept.Finished, swept.Unstored
	for _, id := range done {
		n, err := strconv.ParseUint(id, 10, 64)
		if err != nil {
			continue
		}
		if _, err := p.batchCall(ctx, n, "remove", nil); err != nil {
			return nil, false, err
		}
	}
	stored, dropped := map[uint64][]string{}, map[uint64][]string{}
	looked := map[uint64]bool{}
	for _, entry := range unstored {
		batch, m, _ := strings.Cut(entry, " ")
		id, err1 := strconv.ParseUint(batch, 10, 64)
		num, err2 := parseMember(m)
		if err1 != nil || err2 != nil {
			continue
		}
		if !looked[id] {
			// Still creating past the deadline: its create never answered
			// (a killed broker), so no one holds its id: cancelled, as a
			// refused create is, its jobs pushed cancelled, no callback.
			looked[id] = true
			creating, err := p.client.Do(ctx, p.client.B().Hget().Key(p.keys.batch(b, id)[0]).Field("creating").Build()).ToString()
			if err == nil && creating == "1" {
				if _, err := p.CancelBatch(ctx, id); err != nil {
					return nil, false, err
				}
			} else if err != nil && !rueidis.IsRedisNil(err) {
				return nil, false, wrapRedis("sweep batches", err)
			}
		}
		there, err := p.client.Do(ctx, p.client.B().Hexists().Key(p.keys.buckets[int(num%uint64(p.opts.Buckets))].jobs).Field(m).Build()).AsBool()
		if err != nil {
			return nil, false, wrapRedis("sweep batches", err)
		}
		if there {
			stored[id] = append(stored[id], m)
		} else {
			dropped[id] = append(dropped[id], m)
		}
	}
	for mode, byBatch := range map[string]map[uint64][]string{"stored": stored, "drop": dropped} {
		for id, list := range byBatch {
			var named []string
			if mode == "stored" {
				named = []string{"created", "0"} // the sweep is not the batch's create
			}
			if _, err := p.batchCall(ctx, id, mode, named, list...); err != nil {
				return nil, false, err
			}
		}
	}
	if _, err := call("due"); err != nil {
		return nil, false, wrapRedis("sweep batches", err)
	}
	return nil, len(done) == batchSweepBatch || len(unstored) == batchSweepBatch, nil
}

// checkBatches says where bucket b's batches disagree with themselves:
// each counts every ended member once (completed + dead + removed is its
// ends), ends only members, is in a known state, and is done (or
// cancelled) with a finish time exactly when all have ended and it was
// closed (but one whose create has not answered yet); and the timer is
// told of its sweep.
func (p *Pool) checkBatches(ctx context.Context, b int) []string {
	ids, err := p.client.Do(ctx, p.client.B().Zrange().Key(p.keys.batch(b, 0)[5]).Min("0").Max("-1").Build()).AsStrSlice()
	if err != nil {
		return []string{fmt.Sprintf("bucket %d: batches: %v", b, err)}
	}
	var problems []string
	for _, text := range ids {
		id, err := strconv.ParseUint(text, 10, 64)
		if err != nil {
			problems = append(problems, fmt.Sprintf("bucket %d: batch %q: not a number", b, text))
			continue
		}
		k := p.keys.batch(b, id)
		bt, err := p.Batch(ctx, id)
		if err != nil {
			problems = append(problems, fmt.Sprintf("batch %d: %v", id, err))
			continue
		}
		ends, err1 := p.client.Do(ctx, p.client.B().Hkeys().Key(k[2]).Build()).AsStrSlice()
		listed, err2 := p.client.Do(ctx, p.client.B().Smembers().Key(k[1]).Build()).AsStrSlice()
		creating, err3 := p.client.Do(ctx, p.client.B().Hget().Key(k[0]).Field("creating").Build()).ToString()
		if rueidis.IsRedisNil(err3) {
			err3 = nil
		}
		if err := errors.Join(err1, err2, err3); err != nil {
			problems = append(problems, fmt.Sprintf("batch %d: %v", id, err))
			continue
		}
		slices.Sort(ends)
		slices.Sort(listed)
		if extra := without(ends, listed); len(extra) > 0 {
			problems = append(problems, fmt.Sprintf("batch %d: %d ends of jobs not its members (%s)", id, len(extra), firstFew(extra)))
		}
		if n := bt.Completed + bt.Dead + bt.Removed; n != int64(len(ends)) {
			problems = append(problems, fmt.Sprintf("batch %d: counts %d ends (%d completed, %d dead, %d removed), its ends hold %d", id, n, bt.Completed, bt.Dead, bt.Removed, len(ends)))
		}
		finished, all := !bt.Finished.IsZero(), bt.Pending == 0
		var ok bool
		switch bt.State {
		case job.BatchOpen:
			ok = !finished
		case job.BatchClosed:
			// One whose create has not answered waits for it, or for the
			// sweep that cancels a create a killed broker cut off.
			ok = (!all || creating == "1") && !finished
		case job.BatchDone:
			ok = all && finished
		case job.BatchCancelled:
			ok = all == finished
		}
		if !ok {
			problems = append(problems, fmt.Sprintf("batch %d: %q with %d of %d pending, finished %v", id, bt.State, bt.Pending, bt.Total, finished))
		}
	}
	return problems
}
