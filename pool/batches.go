package pool

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/gmq/gmq/job"
)

// Batches (lua/batches.lua): a batch lives in one bucket, the one its
// number names as a job's does. Creating one lists its members there
// first (each under the number its push will take, and unstored until
// that push is done), then pushes them, each carrying the batch's id
// (F_BATCH), then marks them stored. Each member's end, by whatever path,
// leaves the batch a notice in the member's bucket's follow-ups (lib.lua
// announce_end), which a timer hands to the batch (tellBatch) and removes;
// the batch counts each member once, so a notice told twice changes
// nothing. When a closed batch's members have all ended, the script keeps
// its callbacks among its bucket's follow-ups, each pushed once by its
// marker (followups.go). A batch's bucket timer sweeps it (sweepBatches):
// members a crash left unstored past batchPushWithin are dropped unless
// their job is there, and finished batches are removed past their
// retention.

// BatchFormat is the store format from which batches may be created: an
// older broker would end a member without telling its batch.
const BatchFormat = 6

// ErrBatchesNeedFormat is a batch call on a store below BatchFormat.
var ErrBatchesNeedFormat = fmt.Errorf("%w: batches need the store at format %d, and a broker that reads only an older one is still recorded (docs/operations.md, Upgrades)",
	job.ErrBusy, BatchFormat)

// DefaultBatchRetention is how long a finished batch is kept when
// Options.BatchRetention is 0.
const DefaultBatchRetention = 7 * 24 * time.Hour

// batchPushWithin is how long a member may stay listed but unstored (its
// push under way) before the sweep looks for its job: far past a push.
const batchPushWithin = time.Minute

// batchNoticePrefix starts a member's notice among its bucket's follow-ups
// (lib.lua announce_end): "b BATCH MEMBER".
const batchNoticePrefix = "b "

// batchesDue is the bucket's batch sweep in its due zset (batches.lua).
const batchesDue = "@batches"

// batchSweepBatch is the most batches (or unstored members) one sweep
// round looks at: the rest wait for the next round.
const batchSweepBatch = 20

// batchNotice is a member's notice as lib.lua's announce_end keeps it.
type batchNotice struct {
	How    string  `json:"how"`
	Error  string  `json:"error"`
	Result *string `json:"result"` // a completion's result, when its batch keeps them
}

// batchBucket is the bucket batch id lives in.
func (p *Pool) batchBucket(id uint64) int { return int(id % uint64(p.opts.Buckets)) }

// batchScriptKeys are the keys of a call of batches.lua for batch id.
func (p *Pool) batchScriptKeys(id uint64) []string {
	b := p.batchBucket(id)
	return append(p.keys.withTopics(b), p.keys.batch(b, id)...)
}

// batchCall runs batches.lua's mode on batch id with named arguments,
// then the list more.
func (p *Pool) batchCall(ctx context.Context, id uint64, mode string, named []string, more ...string) ([]rueidis.RedisMessage, error) {
	args := append(batchesScript.args(p.caller(), mode, append([]string{"id", strconv.FormatUint(id, 10)}, named...)...), more...)
	r, err := batchesScript.Exec(ctx, p.client, p.batchScriptKeys(id), args).ToArray()
	if err != nil {
		return nil, wrapRedis("batch "+mode, err)
	}
	if told := decodeBatchesReply(r); told.Status == replyOK && told.Kept && (mode == "stored" || mode == "drop" || mode == "close" || mode == "tell") {
		// It kept callbacks, due now: pushed at once. A timer round that
		// told it holds the follow-ups it took (their lease), so this takes
		// only others.
		p.pushCallbacks(ctx, p.batchBucket(id))
	}
	return r, nil
}

// pushCallbacks pushes now the follow-ups a batch's call just kept in
// bucket b, due now (its callbacks), rather than at the bucket's timer's
// next round, up to [bucket] max_sleep later. One it fails to push is left
// due for that timer, as any follow-up is; those made ready are told to
// the broker's waiting consumers.
func (p *Pool) pushCallbacks(ctx context.Context, b int) {
	ready, _, _ := p.moveFollowUps(ctx, b) // an error leaves them to the timer
	if fn := p.followUpReady.Load(); fn != nil {
		for topic, n := range ready {
			(*fn)(topic, n)
		}
	}
}

// CreateBatch creates a batch of s's jobs (checked by job.CheckBatch) and
// pushes them. It returns the batch's id and its members' pushes, in order
// (their ids, and where each went, for the broker's consumers). A
// member its topic refuses cancels the batch: those pushed are cancelled,
// no callback is pushed, and the refusal is the error.
func (p *Pool) CreateBatch(ctx context.Context, s job.BatchSpec) (uint64, []Pushed, error) {
	if p.Format() < BatchFormat {
		return 0, nil, ErrBatchesNeedFormat
	}
	seqs, err := p.ids.next(ctx, p.client, len(s.Jobs)+1)
	if err != nil {
		return 0, nil, wrapRedis("batch: allocate ids", err)
	}
	id := seqs[0]*uint64(p.opts.Buckets) + seqs[0]%uint64(p.opts.Buckets)
	callbacks := map[string]string{}
	for name, c := range map[string]*job.Spec{"on_complete": s.OnComplete, "on_success": s.OnSuccess, "on_death": s.OnDeath} {
		if c == nil {
			continue
		}
		entries, _, err := p.followUpEntries(ctx, []job.Spec{*c})
		if err != nil {
			return 0, nil, fmt.Errorf("batch: %s: %w", name, err)
		}
		callbacks[name] = entries
	}
	state := job.BatchClosed
	if s.Open {
		state = job.BatchOpen
	}
	ids, list := p.memberIDs(s.Jobs, seqs[1:])
	retention := p.opts.BatchRetention
	if retention <= 0 {
		retention = DefaultBatchRetention
	}
	r, err := p.batchCall(ctx, id, "open", []string{"state", state, "meta", s.Meta, "with_results", flag(s.WithResults),
		"retention", strconv.FormatInt(millis(retention), 10), "on_complete", callbacks["on_complete"],
		"on_success", callbacks["on_success"], "on_death", callbacks["on_death"],
		"deadline", strconv.FormatInt(p.batchDeadline(), 10)}, list...)
	if err != nil {
		return 0, nil, err
	}
	if opened := decodeStatusReply(r); opened.Status != replyOK {
		return 0, nil, fmt.Errorf("batch %d: %s (its number was taken)", id, opened.Status)
	}
	got, err := p.pushMembers(ctx, id, true, s.WithResults, s.Jobs, seqs[1:], ids)
	if err != nil {
		if _, cerr := p.CancelBatch(ctx, id); cerr != nil {
			err = errors.Join(err, cerr)
		}
		return id, nil, err
	}
	return id, got, nil
}

// AddToBatch pushes jobs into batch id, open or closed but not finished
// (job.ErrNotFound: no such batch; a job.StateError-like conflict: done or
// cancelled). A refused member cancels those of this call pushed before
// it, and the refusal is the error; the batch stands.
func (p *Pool) AddToBatch(ctx context.Context, id uint64, jobs []job.Spec) ([]Pushed, error) {
	if p.Format() < BatchFormat {
		return nil, ErrBatchesNeedFormat
	}
	seqs, err := p.ids.next(ctx, p.client, len(jobs))
	if err != nil {
		return nil, wrapRedis("batch: allocate ids", err)
	}
	ids, list := p.memberIDs(jobs, seqs)
	// The cap is checked by the script that lists them, so that adds at
	// once cannot pass it together; it answers whether the batch keeps
	// results, which its jobs carry.
	r, err := p.batchCall(ctx, id, "add", []string{"deadline", strconv.FormatInt(p.batchDeadline(), 10),
		"max", strconv.Itoa(p.maxBatchMembers)}, list...)
	if err != nil {
		return nil, err
	}
	added := decodeBatchesAddReply(r)
	if added.Status == replyFull {
		return nil, fmt.Errorf("%w: batch %d holds %d jobs, at most %d", job.ErrTooMany, id, added.Members, p.maxBatchMembers)
	}
	if err := batchRefusal(id, r); err != nil {
		return nil, err
	}
	return p.pushMembers(ctx, id, false, added.WithResults, jobs, seqs, ids)
}

// CloseBatch closes batch id: once its members have all ended it is done.
// Closing a closed or finished batch changes nothing.
func (p *Pool) CloseBatch(ctx context.Context, id uint64) error {
	r, err := p.batchCall(ctx, id, "close", nil)
	if err != nil {
		return err
	}
	return batchRefusal(id, r)
}

// CancelBatch cancels batch id: no callback of it will be pushed, and its
// members that have not ended are cancelled (a reserved one when its
// consumer next reports, as a cancel of it does). It returns how many
// were asked to cancel.
func (p *Pool) CancelBatch(ctx context.Context, id uint64) (int, error) {
	r, err := p.batchCall(ctx, id, "cancel", nil)
	if err != nil {
		return 0, err
	}
	if err := batchRefusal(id, r); err != nil {
		return 0, err
	}
	n, err := p.cancelMembers(ctx, decodeBatchesCancelReply(r).Members)
	if err != nil {
		return n, fmt.Errorf("cancel batch %d: %w", id, err)
	}
	return n, nil
}

// cancelParallel is how many of a batch's jobs are cancelled at once: a
// large batch's cancel is one script call a job, each in its own bucket.
const cancelParallel = 16

// cancelMembers cancels the jobs of members (a batch's), cancelParallel
// at a time, and says how many it cancelled; one that ended meanwhile is
// not an error (its notice counts it), and the first other failure is.
func (p *Pool) cancelMembers(ctx context.Context, members []string) (int, error) {
	var n atomic.Int64
	var first error
	var mu sync.Mutex
	slots := make(chan struct{}, cancelParallel)
	var wg sync.WaitGroup
	for _, m := range members {
		num, err := parseMember(m)
		if err != nil {
			continue
		}
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			_, err := p.Cancel(ctx, strconv.FormatUint(num, 10))
			var state *job.StateError
			switch {
			case err == nil:
				n.Add(1)
			case errors.Is(err, job.ErrNotFound), errors.As(err, &state), errors.Is(err, job.ErrCancelled):
			default:
				mu.Lock()
				first = cmp.Or(first, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return int(n.Load()), first
}

// errBatchFanout is a batch's job to a topic with fanout children: its
// batch would count one job of the several it makes.
func errBatchFanout(topic string) error {
	return fmt.Errorf("%w: topic %q has fanout children; a batch's job goes to one topic", job.ErrInvalid, topic)
}

// batchRefusal is a batch call's refusal as an error (nil: OK).
func batchRefusal(id uint64, r []rueidis.RedisMessage) error {
	refusal := decodeBatchesReply(r)
	switch refusal.Status {
	case replyOK:
		return nil
	case replyNotFound:
		return fmt.Errorf("batch %d: %w", id, job.ErrNotFound)
	case replyState:
		return fmt.Errorf("%w: batch %d is %s", job.ErrConflict, id, refusal.State)
	}
	return fmt.Errorf("batch %d: unexpected reply %v", id, r)
}

// batchDeadline is when a member listed now must be stored by (Redis's
// clock is the script's; the broker's is near enough for a minute's bound).
func (p *Pool) batchDeadline() int64 { return time.Now().Add(batchPushWithin).UnixMilli() }

// memberIDs are the ids jobs will have under seqs, and their members.
func (p *Pool) memberIDs(jobs []job.Spec, seqs []uint64) ([]uint64, []string) {
	ids := make([]uint64, len(jobs))
	list := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = seqs[i]*uint64(p.opts.Buckets) + uint64(p.keys.bucketOf(j.Topic))
		list[i] = member(ids[i])
	}
	return ids, list
}

// pushMembers pushes jobs into batch id (listed already, under seqs), then
// marks those stored (created: and the batch's create done, so that it may
// finish); on a refusal it cancels those pushed and drops the rest from
// the batch. Pushed into a batch cancelled meanwhile, they are cancelled.
func (p *Pool) pushMembers(ctx context.Context, id uint64, created, withResults bool, jobs []job.Spec, seqs, ids []uint64) ([]Pushed, error) {
	errs := make([]error, len(jobs))
	pushed := make([]Pushed, len(jobs))
	for i, j := range jobs {
		if len(p.fanout.get(j.Topic)) > 0 {
			errs[i] = errBatchFanout(j.Topic)
		}
	}
	var wg sync.WaitGroup
	for i, j := range jobs {
		if errs[i] != nil {
			continue
		}
		j.Batch, j.BatchResults = id, withResults
		wg.Go(func() {
			got, err := p.push(ctx, j, seqs[i], scheduleFire{})
			if err == nil && got.ID != ids[i] {
				err = fmt.Errorf("%w: jobs[%d]: its unique key is held by job %d", job.ErrConflict, i, got.ID)
			}
			pushed[i], errs[i] = got, err
		})
	}
	wg.Wait()
	var stored, unstored []string
	var first error
	for i, err := range errs {
		if err == nil {
			stored = append(stored, member(ids[i]))
			continue
		}
		unstored = append(unstored, member(ids[i]))
		if first == nil {
			first = fmt.Errorf("batch %d: jobs[%d]: %w", id, i, err)
		}
	}
	cancel := func() { _, _ = p.cancelMembers(ctx, stored) } // each end counts it; a failure here leaves them running in a cancelled batch
	if first == nil {
		r, err := p.batchCall(ctx, id, "stored", []string{"created", flag(created)}, stored...)
		if err != nil {
			return nil, err // unmarked, the sweep finds them stored (and a create's batch cancelled)
		}
		if decodeBatchesReply(r).State == job.BatchCancelled { // between the listing and the pushes: its cancel did not see them
			cancel()
			return nil, fmt.Errorf("%w: batch %d was cancelled while these jobs were added: they are cancelled too", job.ErrConflict, id)
		}
		return pushed, nil
	}
	cancel()
	if _, err := p.batchCall(ctx, id, "stored", []string{"created", "0"}, stored...); err != nil {
		return nil, errors.Join(first, err)
	}
	if _, err := p.batchCall(ctx, id, "drop", nil, unstored...); err != nil {
		return nil, errors.Join(first, err)
	}
	return nil, fmt.Errorf("%w (the jobs of this call that were pushed are cancelled)", first)
}

// batchArg is a member's push argument "batch" (F_BATCH): its batch's id,
// and " r" when the batch keeps results.
func batchArg(j job.Spec) string {
	if j.Batch == 0 {
		return ""
	}
	if j.BatchResults {
		return strconv.FormatUint(j.Batch, 10) + " r"
	}
	return strconv.FormatUint(j.Batch, 10)
}

// parseBatchField reads F_BATCH for a job's view.
func parseBatchField(text string) uint64 {
	id, _, _ := strings.Cut(text, " ")
	n, _ := strconv.ParseUint(id, 10, 64)
	return n
}

// noticeBatch is the batch a member's notice (its id as kept) is to.
func noticeBatch(id string) (uint64, string, error) {
	batch, m, ok := strings.Cut(strings.TrimPrefix(id, batchNoticePrefix), " ")
	num, err := strconv.ParseUint(batch, 10, 64)
	if !ok || err != nil {
		return 0, "", fmt.Errorf("notice %s: not a batch's", id)
	}
	return num, m, nil
}

// tellBatch hands batch its members' notices (their ids and specs as
// kept, pairs), all in one call, and says whether they are done with:
// told, or their batch is gone (removed past its retention). One that
// cannot be read is its own error, the others told. Callbacks the call
// kept are pushed by batchCall.
func (p *Pool) tellBatch(ctx context.Context, batch uint64, notices [][2]string) (bad map[string]error, err error) {
	ends := make([]string, 0, 4*len(notices))
	for _, pair := range notices {
		var n batchNotice
		_, m, err := noticeBatch(pair[0])
		if err == nil {
			err = json.Unmarshal([]byte(pair[1]), &n)
		}
		if err != nil {
			if bad == nil {
				bad = map[string]error{}
			}
			bad[pair[0]] = fmt.Errorf("notice %s: unreadable: %w", pair[0], err)
			continue
		}
		result := ""
		if n.Result != nil {
			result = *n.Result
		}
		ends = append(ends, m, n.How, n.Error, result)
	}
	if len(ends) == 0 {
		return bad, nil
	}
	r, err := p.batchCall(ctx, batch, "tell", nil, ends...)
	if err != nil {
		return bad, err
	}
	told := decodeStatusReply(r)
	switch told.Status {
	case replyOK, replyAbsent:
		return bad, nil
	}
	return bad, fmt.Errorf("batch %d: tell: %s", batch, told.Status)
}
