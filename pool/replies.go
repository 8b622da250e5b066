package pool

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gmq/gmq/job"
	"github.com/gmq/gmq/lua"
)

// The contract with the Lua scripts (package lua): what a script's reply
// starts with, and the kinds and modes of batch.lua's operations. A reply
// the pool does not know is an error that names it.

// Reply statuses, the first element of a script's reply: package lua's
// (lua.Statuses), which the scripts spell as R.<NAME> (contract.lua).
const (
	replyOK           = lua.StatusOK
	replyTopic        = lua.StatusTopic
	replyNotFound     = lua.StatusNotFound
	replyStale        = lua.StatusStale
	replyState        = lua.StatusState
	replyEmpty        = lua.StatusEmpty
	replyDropped      = lua.StatusDropped
	replyTotals       = lua.StatusTotals
	replyJobs         = lua.StatusJobs
	replyPeek         = lua.StatusPeek
	replyFull         = lua.StatusFull
	replyTooBig       = lua.StatusTooBig
	replyChildren     = lua.StatusChildren
	replyUnique       = lua.StatusUnique
	replyReplaced     = lua.StatusReplaced
	replyDebounced    = lua.StatusDebounced
	replyUniqueFrom   = lua.StatusUniqueFrom
	replyUniqueFanout = lua.StatusUniqueFanout
	replyAfterFanout  = lua.StatusAfterFanout
	replyAbsent       = lua.StatusAbsent
	replyFired        = lua.StatusFired
	replySkipped      = lua.StatusSkipped
	replyGroupBacklog = lua.StatusGroupBacklog
	replyCancelled    = lua.StatusCancelled
	replyThen         = lua.StatusThen
	replyGeneral      = lua.StatusGeneral
)

// Operation kinds in a batch (batch.lua runs each kind in its phase).
const (
	opPush   = "push"
	opDelete = "delete" // an ack or a delete
	opPop    = "pop"
	opPopN   = "pop_n"
	opAckPop = "ack_pop" // an ack, then a pop in the same bucket
)

// Pop modes: which ready job a pop takes from its topics.
const (
	popFirst = "first" // the first listed topic's best job (gmq's pop)
	popBest  = "best"  // the best job among all the topics (beanstalkd's reserve)
	popPeek  = "peek"  // nothing: name the best job, so the caller can pick a bucket
	popTake  = "take"  // popFirst's job, removed as it is popped whatever its TTR
)

// Delete modes.
const (
	deleteAny        = ""           // any state
	deleteUnreserved = "unreserved" // spare a reserved job (beanstalkd's delete from another connection)
	deleteAck        = "ack"        // a consumer's ack: complete the job where its topic keeps completed jobs
)

// parseJob reads a job reply (lua.ReplyLen values, the first ones of r):
// the member, the body (nil: the record's, or none), Redis's clock and the
// record packed (decodeRecord).
func parseJob(r jobValues) (*job.Job, error) {
	if !r.Whole {
		return nil, fmt.Errorf("job reply: short, want %d values", lua.ReplyLen)
	}
	id, err := parseMember(r.Member)
	if err != nil {
		return nil, err
	}
	rec, err := decodeRecord(r.Record)
	if err != nil {
		return nil, err
	}
	num := func(f lua.Field) int64 { return rec.num[f] }
	text := func(f lua.Field) string { return rec.text[f] }
	ms := func(f lua.Field) time.Duration { return time.Duration(num(f)) * time.Millisecond }
	at := func(f lua.Field) time.Time { // 0: none
		if v := num(f); v > 0 {
			return time.UnixMilli(v)
		}
		return time.Time{}
	}
	body := r.Body
	if !r.HasBody { // false: the record holds it (or the reply carries none)
		body = text(lua.FieldBody)
	}
	return &job.Job{
		ID:           id,
		Body:         body,
		Now:          time.UnixMilli(r.Now),
		State:        job.State(num(lua.FieldState)),
		Topic:        text(lua.FieldTopic),
		Priority:     uint32(num(lua.FieldPriority)),
		TTR:          ms(lua.FieldTTR),
		Delay:        ms(lua.FieldDelay),
		Created:      time.UnixMilli(num(lua.FieldCreated)),
		Due:          at(lua.FieldDue),
		Expires:      at(lua.FieldExpires),
		Reserves:     int(num(lua.FieldReserves)),
		Timeouts:     int(num(lua.FieldTimeouts)),
		Releases:     int(num(lua.FieldReleases)),
		Buries:       int(num(lua.FieldBuries)),
		Kicks:        int(num(lua.FieldKicks)),
		ClientID:     text(lua.FieldClientID),
		Failures:     int(num(lua.FieldFailures)),
		LastError:    text(lua.FieldLastError),
		Errors:       parseErrors(text(lua.FieldErrors)),
		DeadAt:       at(lua.FieldDeadAt),
		TraceParent:  text(lua.FieldTrace),
		Group:        text(lua.FieldGroup),
		BodyJSON:     num(lua.FieldBodyJSON) == 1,
		EndedAt:      at(lua.FieldEndedAt),
		Result:       text(lua.FieldResult),
		Cancelling:   num(lua.FieldCancel) == 1,
		Progress:     text(lua.FieldProgress),
		Log:          parseLog(text(lua.FieldLog)),
		History:      parseHistory(text(lua.FieldHistory)),
		Timeout:      ms(lua.FieldTimeout),
		Then:         followUpIDs(text(lua.FieldThen)),
		OnDead:       followUpIDs(text(lua.FieldOnDead)),
		Dependencies: parseAfter(text(lua.FieldAfter)),
		Batch:        parseBatchField(text(lua.FieldBatch)),
		KeepCompleted: func() time.Duration {
			if !rec.has[lua.FieldKeep] {
				return -1
			}
			return time.Duration(num(lua.FieldKeep)) * time.Second
		}(),
		MaxAttempts: ownMaxAttempts(text(lua.FieldRetry)),
	}, nil
}

// ownMaxAttempts reads the max attempts of a job's own retry policy
// (F_RETRY, job.RetryPolicy.Encode: its first word, "-" for its topic's);
// nil where it has none.
func ownMaxAttempts(policy string) *int {
	word, _, _ := strings.Cut(policy, " ")
	n, err := strconv.Atoi(word)
	if err != nil || n < 0 {
		return nil
	}
	return &n
}

// followUpIDs reads the ids of a job's follow-ups (F_THEN, F_ON_DEAD: the
// JSON [[id, spec], ...] followUpEntries wrote); a list it cannot read is
// none.
func followUpIDs(text string) []uint64 {
	if text == "" {
		return nil
	}
	var entries [][2]string
	if json.Unmarshal([]byte(text), &entries) != nil {
		return nil
	}
	ids := make([]uint64, 0, len(entries))
	for _, e := range entries {
		if id, err := parseMember(e[0]); err == nil {
			ids = append(ids, id)
		}
	}
	return ids
}

// parseLog reads a job's log (F_LOG: a JSON array of [ms, line], as
// progress.lua writes it); a log it cannot read is none.
func parseLog(text string) []job.LogLine {
	if text == "" {
		return nil
	}
	var raw [][2]json.RawMessage
	if json.Unmarshal([]byte(text), &raw) != nil {
		return nil
	}
	out := make([]job.LogLine, 0, len(raw))
	for _, l := range raw {
		var ms float64
		var line string
		if json.Unmarshal(l[0], &ms) == nil && json.Unmarshal(l[1], &line) == nil {
			out = append(out, job.LogLine{At: time.UnixMilli(int64(ms)), Line: line})
		}
	}
	return out
}

// parseErrors reads a job's failures' errors (F_ERRORS: a JSON array of
// [attempt, ms, error], as lib_failures.lua's fail_record writes it); a
// list it cannot read is none.
func parseErrors(text string) []job.FailureError {
	if text == "" {
		return nil
	}
	var raw [][3]json.RawMessage
	if json.Unmarshal([]byte(text), &raw) != nil {
		return nil
	}
	out := make([]job.FailureError, 0, len(raw))
	for _, e := range raw {
		var attempt, ms float64
		var reason string
		if json.Unmarshal(e[0], &attempt) == nil && json.Unmarshal(e[1], &ms) == nil && json.Unmarshal(e[2], &reason) == nil {
			out = append(out, job.FailureError{Attempt: int(attempt), At: time.UnixMilli(int64(ms)), Error: reason})
		}
	}
	return out
}

// parseHistory reads a job's history (F_HISTORY: a JSON array of [ms,
// event, attempt, detail], as lib_events.lua's note writes it); one it cannot
// read is none.
func parseHistory(text string) []job.HistoryEntry {
	if text == "" {
		return nil
	}
	var raw [][4]json.RawMessage
	if json.Unmarshal([]byte(text), &raw) != nil {
		return nil
	}
	out := make([]job.HistoryEntry, 0, len(raw))
	for _, e := range raw {
		var ms, attempt float64
		var event, detail string
		if json.Unmarshal(e[0], &ms) == nil && json.Unmarshal(e[1], &event) == nil &&
			json.Unmarshal(e[2], &attempt) == nil && json.Unmarshal(e[3], &detail) == nil {
			out = append(out, job.HistoryEntry{At: time.UnixMilli(int64(ms)), Event: event, Attempt: int(attempt), Detail: detail})
		}
	}
	return out
}
