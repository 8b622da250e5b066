package pool

import (
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/gmq/gmq/job"
	"github.com/gmq/gmq/lua"
)

// The contract with the Lua scripts (package lua): what a script's reply
// starts with, and the kinds and modes of batch.lua's operations. The
// scripts spell the same words; a reply the pool does not know is an error
// that names it.

// Reply statuses, the first element of a script's reply.
const (
	replyOK       = "OK"        // done; the rest of the reply is the outcome
	replyTopic    = "TOPIC"     // the job is another topic's (named next): nothing changed, ask again with it
	replyNotFound = "NOT_FOUND" // no such job
	replyStale    = "STALE"     // the call names an older delivery (the current one next)
	replyState    = "STATE"     // the job's state (next) does not allow the operation
	replyEmpty    = "EMPTY"     // a pop found no ready job (the wait for a paused topic next)
	replyDropped  = "DROPPED"   // after a batch's replies: the expired jobs whose client ids to drop
	replyJobs     = "JOBS"      // a pop_n's jobs: whether more are ready, their count, then the jobs
	replyPeek     = "PEEK"      // a peek-mode pop's best job: its topic, priority and member
	replyFull     = "FULL"      // a push refused: the topic holds max_items (next) jobs
	replyTooBig   = "TOO_BIG"   // a push refused: the body is over the topic's max_item_size (next)
	replyChildren = "CHILDREN"  // a push refused: its fanout children are not those given (the real ones next)
	// A unique push (unique.go).
	replyUnique       = "UNIQUE"        // refused: its key is held by a job (its member and client id next)
	replyReplaced     = "REPLACED"      // a waiting job's body, delay and priority replaced (its member, now, due, client id next)
	replyDebounced    = "DEBOUNCED"     // a waiting job's due time moved (as REPLACED)
	replyUniqueFrom   = "UNIQUE_FROM"   // refused: the key does not follow the topic's unique_from ('body' or 'none' next): ask again
	replyUniqueFanout = "UNIQUE_FANOUT" // refused: the topic has fanout children
	replyFired        = "FIRED"         // a schedule's fire refused: another broker fired it (its next fire moved)
	replySkipped      = "SKIPPED"       // a schedule's fire made no job: its last one still waits or is reserved (overlap skip)
	replyGroupBacklog = "GROUP_BACKLOG" // a grouped push refused: the topic holds too many ready jobs without a group (their count, the most, next)
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
	deleteAny        = ""           // any state (an ack when fenced by an attempt)
	deleteUnreserved = "unreserved" // spare a reserved job (beanstalkd's delete from another connection)
)

// jobFields is the length of a job reply (lua/contract.go).
var jobFields = lua.ReplyLen

// parseJob reads a job reply (lua.ReplyLen values, the first ones of r):
// the member, the body (nil: the record's, or none), Redis's clock and the
// record packed (decodeRecord).
func parseJob(r []rueidis.RedisMessage) (*job.Job, error) {
	if len(r) < jobFields {
		return nil, fmt.Errorf("job reply has %d values, want %d", len(r), jobFields)
	}
	id, err := parseMember(strAt(r, lua.ReplyMember))
	if err != nil {
		return nil, err
	}
	packed, err := r[lua.ReplyRecord].ToString()
	if err != nil {
		return nil, fmt.Errorf("job reply: its record: %w", err)
	}
	rec, err := decodeRecord(packed)
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
	body, err := r[lua.ReplyBody].ToString()
	if err != nil { // false: the record holds it (or the reply carries none)
		body = text(lua.FieldBody)
	}
	return &job.Job{
		ID:          id,
		Body:        body,
		Now:         time.UnixMilli(intAt(r, lua.ReplyNow)),
		State:       job.State(num(lua.FieldState)),
		Topic:       text(lua.FieldTopic),
		Priority:    uint32(num(lua.FieldPriority)),
		TTR:         ms(lua.FieldTTR),
		Delay:       ms(lua.FieldDelay),
		Created:     time.UnixMilli(num(lua.FieldCreated)),
		Due:         at(lua.FieldDue),
		Expires:     at(lua.FieldExpires),
		Reserves:    int(num(lua.FieldReserves)),
		Timeouts:    int(num(lua.FieldTimeouts)),
		Releases:    int(num(lua.FieldReleases)),
		Buries:      int(num(lua.FieldBuries)),
		Kicks:       int(num(lua.FieldKicks)),
		ClientID:    text(lua.FieldClientID),
		Failures:    int(num(lua.FieldFailures)),
		LastError:   text(lua.FieldLastError),
		DeadAt:      at(lua.FieldDeadAt),
		TraceParent: text(lua.FieldTrace),
		Group:       text(lua.FieldGroup),
		BodyJSON:    num(lua.FieldBodyJSON) == 1,
	}, nil
}
