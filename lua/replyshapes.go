package lua

import "strings"

// The reply shapes (shapes.go says how a row reads). A script's header
// comment says what its values mean; a row here says their order.

// ReplyShapes are every script reply pool decodes, by a name (the script's,
// or the script's and a mode's) that becomes the decoder's.
var ReplyShapes = map[string]ReplyShape{
	// A call on one job (pool's onNumber): the answers every such script
	// may give before its own OK.
	"job_call": {
		StatusTopic:     "topic str",              // the job is this topic's: ask again
		StatusCancelled: "cid str, dropped str",   // cancelled while held: the client ids to drop (dropAck)
		StatusStale:     "current int, state int", // a library loaded by an older broker names no state
		StatusState:     "state int",
		StatusFull:      "limit str, max int",
		StatusTooBig:    "max int, limit str", // limit "max_result": an ack's result
		StatusNotFound:  "",                   // no such job
		StatusThen:      "",                   // an ack of a job with follow-ups: ask followups.lua
	},
	"job":        {StatusOK: "job job", StatusNotFound: ""},                                   // a call that answers the job as it now is
	"ack":        {StatusOK: "cid str, dropped str, kept_ms int"},                             // an ack or delete (THEN: ask followups.lua)
	"cancel":     {StatusOK: "cid str, job job, dropped str"},                                 // job.State 0: removed
	"peek_topic": {StatusOK: "job job, expired pairs...", StatusNotFound: "expired pairs..."}, // expired: member, client id
	"job_list":   {"": "total int, jobs jobs..."},
	"kick":       {"": "kicked int, kind str"},
	"pause":      {StatusOK: "until_ms int", StatusNotFound: ""}, // 0: resumed; NOT_FOUND: no such topic
	// A pop (batch_pop.lua, lib_lean.lua, pop_plain.lua): EMPTY names the
	// soonest a paused topic opens (wait_ms -1: none) and the unique key's
	// holder; PEEK (a peek-mode pop) the best job; JOBS a pop_n's.
	"pop": {
		StatusOK:    "more bool, job job",
		StatusEmpty: "wait_ms int, topic str, held_by str",
		StatusJobs:  "more bool, count int, jobs jobs...",
		StatusPeek:  "topic str, priority int, member str",
	},
	"ack_pop": {StatusOK: "cid str, dropped str, pop raw..."}, // an ack's, then the pop's reply
	// Any reply's status, for a caller that only tells statuses apart.
	"status": {"": "status str"},
	// A reply of replies: batch.lua's (or a plain script's), one an
	// operation in the operations' order, then perhaps one of batch_extra;
	// topic_stats.lua's, one a topic.
	"replies":     {"": "replies arrays..."},
	"batch_extra": {StatusTotals: "adds triples...", StatusDropped: "expired pairs..."}, // adds: hash key, field, amount (totals.go)
	// A plain script's refusal: why ('settings', 'topic', 'job', 'late') and the topic it names.
	"plain_refusal": {StatusGeneral: "why str, topic str"},
	// pop_best_plain.lua: the pop's reply, the totals' (batch_extra), and the
	// bucket of the job (its place among the buckets asked, from 1).
	"pop_best_plain": {"": "pop raw, totals raw, bucket int"},
	// fail.lua: the job as it now is, then the dead jobs max_dead dropped.
	"fail": {StatusOK: "job job, dropped pairs..."}, // dropped: member, client id
	// purge.lua and expire.lua: what they removed, then the removed jobs' member, client id.
	"purge":  {"": "removed int, dropped pairs..."},
	"expire": {"": "looked int, expired int, dropped pairs..."},
	// A push (batch_push.lua, push_plain.lua, lib_jobs.lua). OK: kept 0
	// when the topic holds no job of its id (fanout_only); dropped, the jobs
	// discarded to make room. UNIQUE, REPLACED, DEBOUNCED: the key's holder
	// (unique.go). UNIQUE_FROM: how the topic takes its keys ('body',
	// 'none'). CHILDREN: the topic's fanout children as they are.
	// GROUP_BACKLOG: the ungrouped ready jobs, and the most that may join.
	"push": {
		StatusOK:           "now int, due int, kept bool, dropped pairs...",
		StatusUnique:       "holder str, cid str",
		StatusReplaced:     "holder str, now int, due int, cid str",
		StatusDebounced:    "holder str, now int, due int, cid str",
		StatusUniqueFrom:   "from str",
		StatusChildren:     "children strs...",
		StatusGroupBacklog: "ungrouped int, most int",
		StatusFull:         "limit str, max int",
		StatusTooBig:       "max int",
		StatusSkipped:      "last str",
		StatusExists:       "",
		StatusUniqueFanout: "",
		StatusAfterFanout:  "",
		StatusFired:        "",
	},
	// due_topics.lua: ms until the earliest is due (-1: none), then the due topics.
	"due_topics": {"": "wait_ms int, topics strs..."},
	// tick.lua: jobs made ready, 1 when more is due, then the expired jobs' member, client id.
	"tick": {"": "ready int, more bool, dropped pairs..."},
	// outbox.lua take: an expired job to push to its expire_to, a row each.
	"outbox_take": {"": "jobs outbox_job..."},
	"outbox_job":  {"": "member str, topic str, priority int, ttr_ms int, body str, trace str, group str, json bool"},
	// check.lua: the members of each state's set (job.Stored's order), then the problems it found.
	"check": {"": "delayed int, ready int, reserved int, buried int, dead int, completed int, cancelled int, waiting int, problems strs..."},
	// topic_stats.lua, a topic's: its fields (contract.go's topicStats, in
	// order), then its effective settings.
	"topic_stats": {"": topicStatsShape()},
	// claim_alias.lua: EXISTS names the job holding the client id, and the claim's age.
	"claim_alias": {StatusExists: "member str, age_ms int", StatusOK: ""},
	// deps.lua register: how each dependency stands ('pending', or its
	// end) and its result, in the order the members were given.
	"deps_register": {"": "answers pairs..."},
	// deps.lua tell: the waiting job's state now (0: gone), when it is due,
	// the client id to drop and Redis's clock.
	"deps_tell": {StatusOK: "state int, due int, cid str, now int", StatusTopic: "topic str", StatusAbsent: ""},
	// followups.lua ack: as an ack's, but kept is 'again' when the job's
	// follow-ups were pushed already (ask again); then the follow-ups kept,
	// id and spec. take: the follow-ups due, id and spec.
	"followups_ack":  {StatusOK: "cid str, dropped str, kept str, kept_followups pairs..."},
	"followups_take": {"": "followups pairs..."},
	// batches.lua (its header says which mode answers what): stored, drop,
	// close and tell answer the batch's state, and whether the call kept a
	// callback due now; add, whether the batch keeps results (or how many
	// members it holds, FULL); cancel, the members not yet ended.
	// open, remove and due answer a status alone (a "status" reply).
	"batches":        {StatusOK: "state str, kept bool", StatusState: "state str", StatusNotFound: "", StatusAbsent: ""},
	"batches_add":    {StatusOK: "with_results bool", StatusFull: "members int"},
	"batches_cancel": {StatusOK: "members strs..."},
	"batches_sweep":  {"": "finished strs, unstored strs"},
	// status.lua read: Redis's clock, the fleet's layer, then each
	// broker's; set: Redis's clock and the layer set, or (STATE) the
	// status already due and when.
	"status_read":   {"": "now int, fleet_now str, fleet_next str, fleet_at int, brokers status_broker..."},
	"status_broker": {"": "name str, now str, next str, at int"},
	"status_set":    {StatusOK: "now int, layer_now str, layer_next str, layer_at int", StatusState: "next str, at int", StatusNotFound: ""},
	// announce.lua: the store's format, 1 when the broker is recorded, the
	// store's epoch, then the brokers that read an older format.
	"announce": {"": "format int, recorded int, epoch str, behind strs..."},
	// migrate.lua: the next cursor ('0': the pass is over), bodies moved.
	"migrate": {"": "cursor str, moved int"},
	// Redis's CLUSTER SLOTS: a range a value, each its slots and its
	// master (host, port, ...).
	"cluster_slots": {"": "ranges arrays..."},
	"slot_range":    {"": "from int, to int, master raw"},
	"slot_master":   {"": "host str, port int"},
}

// topicStatsShape is topic_stats.lua's reply shape, from topicStats.
func topicStatsShape() string {
	var values []string
	for _, stat := range topicStats {
		name := strings.ToLower(strings.TrimPrefix(stat[0], "S_"))
		typ := "int"
		if stat[0] == "S_CHILDREN" || stat[0] == "S_BUSIEST_GROUPS" {
			typ = "str"
		}
		values = append(values, name+" "+typ)
	}
	return strings.Join(append(values, "settings pairs..."), ", ")
}
