package pool

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gmq/gmq/job"
)

// batchOf creates a batch, failing the test on an error.
func batchOf(t *testing.T, p *Pool, ctx context.Context, s job.BatchSpec) (uint64, []uint64) {
	t.Helper()
	if err := job.CheckBatch(s); err != nil {
		t.Fatal(err)
	}
	id, got, err := p.CreateBatch(ctx, s)
	if err != nil {
		t.Fatalf("create batch: %v", err)
	}
	return id, pushedIDs(got)
}

func pushedIDs(got []Pushed) []uint64 {
	ids := make([]uint64, len(got))
	for i, g := range got {
		ids[i] = g.ID
	}
	return ids
}

func batchNow(t *testing.T, p *Pool, ctx context.Context, id uint64) job.Batch {
	t.Helper()
	b, err := p.Batch(ctx, id)
	if err != nil {
		t.Fatalf("batch %d: %v", id, err)
	}
	return b
}

// callbackBody pops topic's next job, which must be there, acks it and
// returns its body.
func callbackBody(t *testing.T, p *Pool, ctx context.Context, topic string) string {
	t.Helper()
	j := mustPop(t, p, ctx, topic)
	if j == nil {
		t.Fatalf("no callback in %s", topic)
	}
	if err := p.Ack(ctx, num(j.ID), j.Attempt(), ""); err != nil {
		t.Fatal(err)
	}
	return j.Body
}

// summaryOf reads a callback's body pushed with_result: the batch's summary.
func summaryOf(t *testing.T, body string) map[string]any {
	t.Helper()
	var v struct {
		Result map[string]any `json:"result"`
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil || v.Result == nil {
		t.Fatalf("callback body %q: %v", body, err)
	}
	return v.Result
}

// A batch's members, in several buckets, end each their way: on_death is
// pushed at the first death, on_complete once all have ended, with the
// counts, and on_success never (one died); a notice told again, or a
// member that ends twice, counts once.
func TestBatchCallbacks(t *testing.T) {
	p, ctx := newPool(t)
	cb := func(topic string) *job.Spec {
		return &job.Spec{Topic: topic, Body: "cb", TTR: time.Minute, WithResult: true}
	}
	id, ids := batchOf(t, p, ctx, job.BatchSpec{
		Jobs: []job.Spec{
			{Topic: "bt-a", Body: "1", TTR: time.Minute},
			{Topic: "bt-b", Body: "2", TTR: time.Minute},
			{Topic: "bt-c", Body: "3", TTR: time.Minute, Retry: once()},
		},
		OnComplete: cb("bt-complete"), OnSuccess: cb("bt-success"), OnDeath: cb("bt-death"), Meta: `{"order":12345678901234567}`,
	})
	if b := batchNow(t, p, ctx, id); b.State != job.BatchClosed || b.Total != 3 || b.Pending != 3 || len(b.Callbacks) != 3 {
		t.Fatalf("a new batch: %+v", b)
	}
	if j, err := p.Peek(ctx, num(ids[0])); err != nil || j.Batch != id {
		t.Fatalf("a member's view: %+v %v, want batch %d", j, err, id)
	}
	checkClean(t, p, ctx)
	popAck(t, p, ctx, "bt-a", ids[0], "")
	j := mustPop(t, p, ctx, "bt-c")
	if _, err := p.Fail(ctx, num(ids[2]), j.Attempt(), "boom"); err != nil {
		t.Fatal(err)
	}
	tellAll(t, p, ctx)
	tellAll(t, p, ctx) // the callbacks, kept in the batch's bucket
	if s := summaryOf(t, callbackBody(t, p, ctx, "bt-death")); s["dead"] != 1.0 || s["total"] != 3.0 {
		t.Fatalf("on_death's summary: %v", s)
	}
	if got := mustPop(t, p, ctx, "bt-complete"); got != nil {
		t.Fatalf("on_complete pushed with a member pending: %+v", got)
	}
	b := batchNow(t, p, ctx, id)
	if b.Pending != 1 || b.Completed != 1 || b.Dead != 1 || b.DeadMembers[ids[2]] != "boom" {
		t.Fatalf("two of three ended: %+v", b)
	}
	// The dead one retried and completed: counted once, as dead (its
	// first end).
	if _, err := p.RetryDead(ctx, "bt-c", []string{num(ids[2])}); err != nil {
		t.Fatal(err)
	}
	popAck(t, p, ctx, "bt-c", ids[2], "")
	popAck(t, p, ctx, "bt-b", ids[1], "")
	tellAll(t, p, ctx)
	tellAll(t, p, ctx)
	s := summaryOf(t, callbackBody(t, p, ctx, "bt-complete"))
	if s["completed"] != 2.0 || s["dead"] != 1.0 || s["total"] != 3.0 || s["state"] != job.BatchDone || s["batch"] != strconv.FormatUint(id, 10) {
		t.Fatalf("on_complete's summary: %v", s)
	}
	if meta, _ := s["meta"].(map[string]any); meta == nil {
		t.Fatalf("on_complete's summary has no meta: %v", s)
	}
	if got := mustPop(t, p, ctx, "bt-success"); got != nil {
		t.Fatalf("on_success pushed though a member died: %+v", got)
	}
	// Notices told again change nothing, one told twice in one call too;
	// one that cannot be read is its own error.
	notice := func(m uint64) string { return batchNoticePrefix + strconv.FormatUint(id, 10) + " " + member(m) }
	bad, err := p.tellBatch(ctx, id, [][2]string{{notice(ids[1]), `{"how":"dead"}`}, {notice(ids[2]), `{"how":"completed"}`},
		{notice(ids[2]), `{"how":"completed"}`}, {notice(ids[0]), `{"how":`}})
	if err != nil || len(bad) != 1 || bad[notice(ids[0])] == nil {
		t.Fatalf("notices told again: %v %v", bad, err)
	}
	tellAll(t, p, ctx)
	for _, topic := range []string{"bt-complete", "bt-death"} {
		if got := mustPop(t, p, ctx, topic); got != nil {
			t.Fatalf("%s pushed twice: %+v", topic, got)
		}
	}
	if b := batchNow(t, p, ctx, id); b.State != job.BatchDone || b.Pending != 0 || b.Completed != 2 || b.Dead != 1 || b.Finished.IsZero() {
		t.Fatalf("the batch done: %+v", b)
	}
	checkClean(t, p, ctx)
}

// A batch whose members all complete pushes on_success and on_complete,
// with the members' results when it keeps them.
func TestBatchSuccessWithResults(t *testing.T) {
	p, ctx := newPool(t)
	id, ids := batchOf(t, p, ctx, job.BatchSpec{
		Jobs:        []job.Spec{{Topic: "bs-a", Body: "1", TTR: time.Minute}, {Topic: "bs-b", Body: "2", TTR: time.Minute}},
		OnSuccess:   &job.Spec{Topic: "bs-success", Body: `{"x":1}`, BodyJSON: true, TTR: time.Minute, WithResult: true},
		OnComplete:  &job.Spec{Topic: "bs-complete", Body: "plain", TTR: time.Minute},
		WithResults: true,
	})
	popAck(t, p, ctx, "bs-a", ids[0], `{"rows":3}`)
	popAck(t, p, ctx, "bs-b", ids[1], "")
	tellAll(t, p, ctx)
	tellAll(t, p, ctx)
	if body := callbackBody(t, p, ctx, "bs-complete"); body != "plain" {
		t.Fatalf("on_complete without with_result: body %q", body)
	}
	body := callbackBody(t, p, ctx, "bs-success")
	s := summaryOf(t, body)
	results, _ := s["results"].(map[string]any)
	if rows, _ := results[num(ids[0])].(map[string]any); rows["rows"] != 3.0 || len(results) != 2 || results[num(ids[1])] != nil {
		t.Fatalf("on_success's summary: %s", body)
	}
	if s["results_left_out"] != 0.0 {
		t.Fatalf("on_success's summary left results out: %s", body)
	}
	if b := batchNow(t, p, ctx, id); b.State != job.BatchDone || b.Completed != 2 {
		t.Fatalf("the batch: %+v", b)
	}
	// Results past the summary's bound are counted, not shown.
	big := `"` + strings.Repeat("r", 16000) + `"`
	_, ids = batchOf(t, p, ctx, job.BatchSpec{
		Jobs:        []job.Spec{{Topic: "bs-a", Body: "1", TTR: time.Minute}, {Topic: "bs-a", Body: "2", TTR: time.Minute}, {Topic: "bs-a", Body: "3", TTR: time.Minute}},
		OnComplete:  &job.Spec{Topic: "bs-complete", Body: "big", TTR: time.Minute, WithResult: true},
		WithResults: true,
	})
	for _, id := range ids {
		popAck(t, p, ctx, "bs-a", id, big)
	}
	tellAll(t, p, ctx)
	tellAll(t, p, ctx)
	body = callbackBody(t, p, ctx, "bs-complete")
	s = summaryOf(t, body)
	if shown, _ := s["results"].(map[string]any); len(shown) != 2 || s["results_left_out"] != 1.0 || len(body) > 40000 {
		t.Fatalf("a summary of three 16 kB results: %d bytes, %d shown, %v left out", len(body), len(shown), s["results_left_out"])
	}
	checkClean(t, p, ctx)
}

// An open batch takes more jobs and does not finish, even with every
// member ended, until it is closed; then it finishes at once. A finished
// one takes no more; a member may be deleted, cancelled or purged and
// counts as removed.
func TestOpenBatch(t *testing.T) {
	p, ctx := newPool(t)
	id, ids := batchOf(t, p, ctx, job.BatchSpec{Jobs: []job.Spec{{Topic: "bo-a", Body: "1", TTR: time.Minute}},
		OnComplete: &job.Spec{Topic: "bo-complete", Body: "cb", TTR: time.Minute, WithResult: true}, Open: true})
	popAck(t, p, ctx, "bo-a", ids[0], "")
	added, err := p.AddToBatch(ctx, id, []job.Spec{{Topic: "bo-a", Body: "2", TTR: time.Minute}, {Topic: "bo-b", Body: "3", TTR: time.Minute}, {Topic: "bo-b", Body: "4", TTR: time.Minute}})
	more := pushedIDs(added)
	if err != nil || len(more) != 3 {
		t.Fatalf("add: %v %v", more, err)
	}
	if err := p.Delete(ctx, num(more[0]), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Cancel(ctx, num(more[1])); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Purge(ctx, "bo-b", job.Ready); err != nil {
		t.Fatal(err)
	}
	tellAll(t, p, ctx)
	tellAll(t, p, ctx)
	if b := batchNow(t, p, ctx, id); b.State != job.BatchOpen || b.Pending != 0 || b.Removed != 3 || b.Completed != 1 {
		t.Fatalf("an open batch whose members ended: %+v", b)
	}
	if got := mustPop(t, p, ctx, "bo-complete"); got != nil {
		t.Fatalf("on_complete of an open batch: %+v", got)
	}
	checkClean(t, p, ctx)
	if err := p.CloseBatch(ctx, id); err != nil {
		t.Fatal(err)
	}
	tellAll(t, p, ctx)
	if s := summaryOf(t, callbackBody(t, p, ctx, "bo-complete")); s["removed"] != 3.0 || s["total"] != 4.0 {
		t.Fatalf("on_complete's summary: %v", s)
	}
	if _, err := p.AddToBatch(ctx, id, []job.Spec{{Topic: "bo-a", Body: "late", TTR: time.Minute}}); !errors.Is(err, job.ErrConflict) {
		t.Fatalf("add to a done batch: %v, want a conflict", err)
	}
	if err := p.CloseBatch(ctx, id); err != nil {
		t.Fatalf("close a done batch again: %v", err)
	}
	// The cap is the listing script's: past it, nothing is listed.
	open, _ := batchOf(t, p, ctx, job.BatchSpec{Open: true})
	if r, err := p.batchCall(ctx, open, "add", []string{"deadline", "1", "max", "1"}, member(1), member(2)); err != nil || decodeStatusReply(r).Status != replyFull {
		t.Fatalf("two jobs listed in a batch of at most one: %v %v", r, err)
	}
	if b := batchNow(t, p, ctx, open); b.Total != 0 {
		t.Fatalf("a refused listing listed %d", b.Total)
	}
	if _, err := p.AddToBatch(ctx, 12345, []job.Spec{{Topic: "bo-a", Body: "x"}}); !errors.Is(err, job.ErrNotFound) {
		t.Fatalf("add to no batch: %v", err)
	}
	checkClean(t, p, ctx)
}

// Cancelling a batch cancels its members still waiting and pushes no
// callback; it finishes once they have ended.
func TestCancelBatch(t *testing.T) {
	p, ctx := newPool(t)
	id, ids := batchOf(t, p, ctx, job.BatchSpec{
		Jobs:       []job.Spec{{Topic: "bc-a", Body: "1", TTR: time.Minute}, {Topic: "bc-b", Body: "2", TTR: time.Minute, Delay: time.Hour}},
		OnComplete: &job.Spec{Topic: "bc-complete", Body: "cb", TTR: time.Minute},
	})
	popAck(t, p, ctx, "bc-a", ids[0], "")
	n, err := p.CancelBatch(ctx, id)
	if err != nil || n != 1 {
		t.Fatalf("cancel: %d %v, want 1 cancelled", n, err)
	}
	tellAll(t, p, ctx)
	tellAll(t, p, ctx)
	if got := mustPop(t, p, ctx, "bc-complete"); got != nil {
		t.Fatalf("on_complete of a cancelled batch: %+v", got)
	}
	b := batchNow(t, p, ctx, id)
	if b.State != job.BatchCancelled || b.Pending != 0 || b.Finished.IsZero() || b.Completed != 1 || b.Removed != 1 {
		t.Fatalf("the cancelled batch: %+v", b)
	}
	// Cancelled again: nothing changes, not when it finished either.
	time.Sleep(5 * time.Millisecond) // a later finish would show (Redis's clock, ms)
	if n, err := p.CancelBatch(ctx, id); err != nil || n != 0 {
		t.Fatalf("cancel again: %d %v", n, err)
	}
	if again := batchNow(t, p, ctx, id); !again.Finished.Equal(b.Finished) {
		t.Fatalf("cancelled again, it finished at %v, then %v", b.Finished, again.Finished)
	}
	checkClean(t, p, ctx)
}

// A member its topic refuses (its unique key held) refuses the whole
// batch: the others pushed are cancelled, no callback is pushed. A member
// that holds a unique key stays in its batch when a later push replaces it.
func TestBatchMemberRefusedAndReplaced(t *testing.T) {
	p, ctx := newPool(t)
	key := func(k string, mode job.UniqueMode) *job.Unique {
		return &job.Unique{Key: k, For: time.Hour, Mode: mode}
	}
	holder := mustPush(t, p, ctx, job.Spec{Topic: "br-a", Body: "h", TTR: time.Minute, Unique: key("k1", job.UniqueReject)})
	id, _, err := p.CreateBatch(ctx, job.BatchSpec{Jobs: []job.Spec{
		{Topic: "br-b", Body: "1", TTR: time.Minute},
		{Topic: "br-a", Body: "2", TTR: time.Minute, Unique: key("k1", job.UniqueReject)},
	}, OnComplete: &job.Spec{Topic: "br-complete", Body: "cb", TTR: time.Minute}})
	var held *job.UniqueError
	if !errors.As(err, &held) || held.ID != holder {
		t.Fatalf("a batch with a member whose key is held: %v", err)
	}
	tellAll(t, p, ctx)
	tellAll(t, p, ctx)
	if b := batchNow(t, p, ctx, id); b.State != job.BatchCancelled || b.Pending != 0 {
		t.Fatalf("the refused batch: %+v", b)
	}
	if j := mustPop(t, p, ctx, "br-b"); j != nil {
		t.Fatalf("a refused batch's other member is ready: %+v", j)
	}
	if j := mustPop(t, p, ctx, "br-complete"); j != nil {
		t.Fatalf("a refused batch's callback: %+v", j)
	}
	popAck(t, p, ctx, "br-a", holder, "")
	// A member that holds a key, replaced by a later push.
	id, ids := batchOf(t, p, ctx, job.BatchSpec{Jobs: []job.Spec{{Topic: "br-a", Body: "old", TTR: time.Minute, Unique: key("k2", job.UniqueReject)}}})
	got, err := p.Push(ctx, job.Spec{Topic: "br-a", Body: "new", TTR: time.Minute, Priority: job.DefaultPriority, Unique: key("k2", job.UniqueReplace)})
	if err != nil || got.ID != ids[0] {
		t.Fatalf("replace the member: %+v %v", got, err)
	}
	j := mustPop(t, p, ctx, "br-a")
	if j == nil || j.ID != ids[0] || j.Body != "new" || j.Batch != id {
		t.Fatalf("the replaced member: %+v", j)
	}
	if err := p.Ack(ctx, num(j.ID), j.Attempt(), ""); err != nil {
		t.Fatal(err)
	}
	tellAll(t, p, ctx)
	if b := batchNow(t, p, ctx, id); b.State != job.BatchDone || b.Completed != 1 {
		t.Fatalf("its batch: %+v", b)
	}
	// A job whose topic keys it on its body, in mode replace, with the key
	// held by a waiting job: refused (409 naming the holder), the holder
	// not changed, the batch cancelled.
	if err := p.SetTopicConfig(ctx, "br-u", job.TopicConfig{"unique_from": "body", "unique_mode": "replace"}); err != nil {
		t.Fatal(err)
	}
	outside := mustPush(t, p, ctx, job.Spec{Topic: "br-u", Body: "same", TTR: time.Minute, Priority: 5})
	if _, _, err := p.CreateBatch(ctx, job.BatchSpec{Jobs: []job.Spec{{Topic: "br-u", Body: "same", TTR: 11 * time.Second, Priority: 1}}}); !errors.As(err, &held) || held.ID != outside {
		t.Fatalf("a batch's job whose topic would replace another: %v", err)
	}
	if j, err := p.Peek(ctx, num(outside)); err != nil || j.Priority != 5 || j.TTR != time.Minute || j.Batch != 0 {
		t.Fatalf("the job that holds the key: %+v %v, want it unchanged", j, err)
	}
	// A job to a topic with fanout children, though this pool's list of
	// them is stale (another pool's pop made the child), is refused by the
	// script, whole.
	other, _ := newPoolWith(t, Options{})
	if j := mustPop(t, other, ctx, "br-fan+kid"); j != nil {
		t.Fatalf("a new child has a job: %+v", j)
	}
	if _, _, err := p.CreateBatch(ctx, job.BatchSpec{Jobs: []job.Spec{{Topic: "br-fan", Body: "x", TTR: time.Minute}},
		OnComplete: &job.Spec{Topic: "br-complete", Body: "cb", TTR: time.Minute}}); !errors.Is(err, job.ErrInvalid) || !strings.Contains(err.Error(), "fanout") {
		t.Fatalf("a batch's job to a topic with fanout children: %v", err)
	}
	tellAll(t, p, ctx)
	if j := mustPop(t, p, ctx, "br-complete"); j != nil {
		t.Fatalf("its callback: %+v", j)
	}
	if err := job.CheckBatch(job.BatchSpec{Jobs: []job.Spec{{Topic: "br-a", Body: "x", Unique: key("k3", job.UniqueReplace)}}}); !errors.Is(err, job.ErrInvalid) {
		t.Fatal("a batch's job may replace another")
	}
	checkClean(t, p, ctx)
}

// waitFor polls ok until it holds; its deadline is only for what never
// happens.
func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not so after 30s", what)
		}
	}
}

// A create whose every job is refused leaves a cancelled batch and pushes
// no callback (it would be an empty batch, done, were it not for its
// create's refusal); one a killed broker left half made (listed, never
// answered) is cancelled by the sweep, with no callback either.
func TestBatchCreateRefusedOrCutOff(t *testing.T) {
	p, ctx := newPool(t)
	for _, k := range []string{"h1", "h2"} {
		mustPush(t, p, ctx, job.Spec{Topic: "bx-a", Body: k, TTR: time.Minute, Unique: &job.Unique{Key: k, For: time.Hour, Mode: job.UniqueReject}})
	}
	cb := &job.Spec{Topic: "bx-cb", Body: "cb", TTR: time.Minute}
	id, _, err := p.CreateBatch(ctx, job.BatchSpec{Jobs: []job.Spec{
		{Topic: "bx-a", Body: "1", Unique: &job.Unique{Key: "h1", For: time.Hour, Mode: job.UniqueReject}},
		{Topic: "bx-a", Body: "2", Unique: &job.Unique{Key: "h2", For: time.Hour, Mode: job.UniqueReject}},
	}, OnComplete: cb, OnSuccess: cb})
	if err == nil || strings.Contains(err.Error(), "done") {
		t.Fatalf("a create whose jobs are all refused: %v", err)
	}
	tellAll(t, p, ctx)
	tellAll(t, p, ctx)
	if b := batchNow(t, p, ctx, id); b.State != job.BatchCancelled || b.Total != 0 {
		t.Fatalf("the refused batch: %+v", b)
	}
	if j := mustPop(t, p, ctx, "bx-cb"); j != nil {
		t.Fatalf("a refused batch's callback: %+v", j)
	}
	// Cut off: opened, a job listed, never pushed nor answered.
	seqs, err := p.ids.next(ctx, p.client, 3)
	if err != nil {
		t.Fatal(err)
	}
	cut := seqs[0]*uint64(p.opts.Buckets) + seqs[0]%uint64(p.opts.Buckets)
	entries, _, err := p.followUpEntries(ctx, []job.Spec{*cb})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.batchCall(ctx, cut, "open", []string{"state", job.BatchClosed, "meta", "", "with_results", "0", "retention", "60000",
		"on_complete", entries, "on_success", "", "on_death", "", "deadline", "1"}, member(seqs[1]*uint64(p.opts.Buckets))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the sweep cancels the batch its create left", func() bool {
		if _, _, err := p.Tick(ctx, p.batchBucket(cut), batchesDue); err != nil {
			t.Fatal(err)
		}
		b, err := p.Batch(ctx, cut)
		return err == nil && b.State == job.BatchCancelled && !b.Finished.IsZero()
	})
	tellAll(t, p, ctx)
	if j := mustPop(t, p, ctx, "bx-cb"); j != nil {
		t.Fatalf("a cut-off batch's callback: %+v", j)
	}
	checkClean(t, p, ctx)
	// Cut off after its job was pushed and ended: every job ended, it
	// waits for its create's answer (or the sweep), which Check allows.
	if seqs, err = p.ids.next(ctx, p.client, 2); err != nil {
		t.Fatal(err)
	}
	late := seqs[0]*uint64(p.opts.Buckets) + seqs[0]%uint64(p.opts.Buckets)
	n := seqs[1]*uint64(p.opts.Buckets) + uint64(p.keys.bucketOf("bx-a"))
	if _, err := p.batchCall(ctx, late, "open", []string{"state", job.BatchClosed, "meta", "", "with_results", "0", "retention", "60000",
		"on_complete", "", "on_success", "", "on_death", "", "deadline", strconv.FormatInt(time.Now().Add(time.Hour).UnixMilli(), 10)}, member(n)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.push(ctx, job.Spec{Topic: "bx-a", Body: "late", TTR: time.Minute, Batch: late}, seqs[1], scheduleFire{}); err != nil {
		t.Fatal(err)
	}
	popAck(t, p, ctx, "bx-a", n, "")
	tellAll(t, p, ctx)
	if b := batchNow(t, p, ctx, late); b.State != job.BatchClosed || b.Pending != 0 || !b.Finished.IsZero() {
		t.Fatalf("a batch whose create has not answered, its job ended: %+v", b)
	}
	checkClean(t, p, ctx)
}
