package lua

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Reply statuses: the first element of a script's reply (and of each
// operation's in a batch). The scripts spell them R.OK, R.NOT_FOUND...
// (contract.lua's R, generated from Statuses); package pool compares them
// with these constants. A reply the pool does not know is an error that
// names it.
const (
	StatusOK       = "OK"        // done; the rest of the reply is the outcome
	StatusTopic    = "TOPIC"     // the job is another topic's (named next): nothing changed, ask again with it
	StatusNotFound = "NOT_FOUND" // no such job
	StatusStale    = "STALE"     // the call names an older delivery (the current one next, then the job's state)
	StatusState    = "STATE"     // the job's state (next) does not allow the operation
	StatusExists   = "EXISTS"    // a push's member is taken (the id counter went back); a client id held by another job (its member and age next)
	StatusEmpty    = "EMPTY"     // a pop found no ready job (the wait for a paused topic next)
	StatusDropped  = "DROPPED"   // after a batch's replies: the expired jobs whose client ids to drop
	StatusTotals   = "TOTALS"    // after a batch's replies: the totals the broker adds up (hash key, field, amount, ...)
	StatusJobs     = "JOBS"      // a pop_n's jobs: whether more are ready, their count, then the jobs
	StatusPeek     = "PEEK"      // a peek-mode pop's best job: its topic, priority and member
	StatusFull     = "FULL"      // a push refused: the topic holds max_items (next) jobs
	StatusTooBig   = "TOO_BIG"   // a push refused: the body is over the topic's max_item_size (next)
	StatusChildren = "CHILDREN"  // a push refused: its fanout children are not those given (the real ones next)
	// A unique push (pool/unique.go).
	StatusUnique       = "UNIQUE"        // refused: its key is held by a job (its member and client id next)
	StatusReplaced     = "REPLACED"      // a waiting job's body, delay and priority replaced (its member, now, due, client id next)
	StatusDebounced    = "DEBOUNCED"     // a waiting job's due time moved (as REPLACED)
	StatusUniqueFrom   = "UNIQUE_FROM"   // refused: the key does not follow the topic's unique_from ('body' or 'none' next): ask again
	StatusUniqueFanout = "UNIQUE_FANOUT" // refused: the topic has fanout children
	StatusAfterFanout  = "AFTER_FANOUT"  // refused: a push with after to a topic with fanout children
	StatusAbsent       = "ABSENT"        // deps.lua tell: no such job (not yet stored)
	StatusFired        = "FIRED"         // a schedule's fire refused: another broker fired it (its next fire moved)
	StatusSkipped      = "SKIPPED"       // a schedule's fire made no job: its last one still waits or is reserved (overlap skip)
	StatusGroupBacklog = "GROUP_BACKLOG" // a grouped push refused: the topic holds too many ready jobs without a group (their count, the most, next)
	StatusCancelled    = "CANCELLED"     // a touch, progress, ack, release, bury or fail of a job cancelled while reserved: it ended cancelled
	StatusThen         = "THEN"          // an ack refused: the job has follow-ups of its own, which only followups.lua keeps (ask it)
	StatusGeneral      = "GENERAL"       // a plain path's call refused, nothing written: the bucket's settings ask for batch.lua (pool/plain.go)
)

// Statuses lists every reply status, for contract.lua's R.
var Statuses = []string{StatusOK, StatusTopic, StatusNotFound, StatusStale, StatusState, StatusExists, StatusEmpty,
	StatusDropped, StatusJobs, StatusPeek, StatusFull, StatusTooBig, StatusChildren, StatusUnique, StatusReplaced,
	StatusDebounced, StatusUniqueFrom, StatusUniqueFanout, StatusAfterFanout, StatusAbsent, StatusFired, StatusSkipped, StatusGroupBacklog, StatusCancelled, StatusThen, StatusTotals, StatusGeneral}

// statusTable is R as a Lua table constructor: every status, or only
// those named (a standalone script's, which Source gives it).
func statusTable(only []string) string {
	var parts []string
	for _, s := range Statuses {
		if only == nil || slices.Contains(only, s) {
			parts = append(parts, fmt.Sprintf("%s = '%s'", s, s))
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

var statusUse = regexp.MustCompile(`\bR\.([A-Z_]+)`)

// statusesOf are the statuses script body reads (R.<NAME>), in order.
func statusesOf(body string) []string {
	var out []string
	for _, m := range statusUse.FindAllStringSubmatch(body, -1) {
		if !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	return out
}
