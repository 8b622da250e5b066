package lua

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gmq/gmq/job"
)

// The contract between Go and the scripts, in one place: the job record's
// fields, the job reply, the keys every topic-scoped script takes and the
// states a record holds. contract.lua, which opens the Prelude (lua.go), is
// generated from these tables (go generate ./lua; TestContractIsGenerated
// fails when it is stale), and package pool reads replies and orders keys
// through them. Adding a field to the record is a constant and a row below,
// then the code that uses the field: no position is written anywhere else.

// Field is a field of the job record, a cmsgpack array: its position there
// (1-based, as Lua counts). A field is only ever added at the end, since
// records already stored keep their positions; Zero is what a record
// written before the field was added reads as.
type Field int

// The job record's fields (fields says what each holds).
const (
	FieldState Field = iota + 1
	FieldTopic
	FieldPriority
	FieldTTR
	FieldDelay
	FieldCreated
	FieldDue
	FieldReserves
	FieldTimeouts
	FieldReleases
	FieldBuries
	FieldKicks
	FieldClientID
	FieldSize
	FieldExpires
	FieldFailures
	FieldLastError
	FieldDeadAt
	FieldRetry
	FieldTrace
	FieldGroup
	FieldBodyJSON
	FieldBody
	FieldKeep
	FieldEndedAt
	FieldResult
	FieldWaited
	FieldCancel
	FieldProgress
	FieldLog
	FieldHistory
	FieldTimeout
	FieldThen
	FieldOnDead
	FieldAfter
	FieldDependents
	FieldBatch
	FieldErrors
	fieldEnd
)

// FieldCount is one past the last field's number: an array indexed by a
// field's number has room for all.
const FieldCount = int(fieldEnd)

// fieldSpec is how the scripts name and read a field.
type fieldSpec struct {
	lua   string // its constant in the scripts
	doc   string
	text  bool // a string ('' when unset), else a number (0)
	added bool // added after records were stored: an older record has no value (read as unset)
	// absent: unset means not in the record at all (nil: new_record leaves it
	// out), as its zero would be a value; only last fields may be absent.
	absent bool
}

var fields = [fieldEnd]fieldSpec{
	FieldState:     {lua: "F_STATE", doc: "the job's state (its number below)"},
	FieldTopic:     {lua: "F_TOPIC", text: true, doc: "its topic (EXPIRED: the topic it is on its way to)"},
	FieldPriority:  {lua: "F_PRI", doc: "lower runs first"},
	FieldTTR:       {lua: "F_TTR", doc: "ms a consumer has to ack it (0: removed as it is popped)"},
	FieldDelay:     {lua: "F_DELAY", doc: "ms it waited (or waits) before it was ready"},
	FieldCreated:   {lua: "F_CREATED", doc: "ms, Redis's clock"},
	FieldDue:       {lua: "F_DUE", doc: "ms: delayed, when it is ready; reserved, when its TTR runs out; else 0"},
	FieldReserves:  {lua: "F_RESERVES", doc: "deliveries so far: the attempt an ack names"},
	FieldTimeouts:  {lua: "F_TIMEOUTS", doc: "deliveries whose TTR ran out"},
	FieldReleases:  {lua: "F_RELEASES", doc: "releases by consumers"},
	FieldBuries:    {lua: "F_BURIES", doc: "buries"},
	FieldKicks:     {lua: "F_KICKS", doc: "kicks"},
	FieldClientID:  {lua: "F_CID", text: true, doc: "the producer's id ('': gmq's number)"},
	FieldSize:      {lua: "F_SIZE", added: true, doc: "the body's length: a removal lowers its topic's 'bytes' without reading the body"},
	FieldExpires:   {lua: "F_EXPIRES", added: true, doc: "ms it expires at (0: never)"},
	FieldFailures:  {lua: "F_FAILURES", added: true, doc: "fails, and TTRs that ran out"},
	FieldLastError: {lua: "F_LAST_ERROR", text: true, added: true, doc: "the last failure's error (at most 1 KiB)"},
	FieldDeadAt:    {lua: "F_DEAD_AT", added: true, doc: "ms it died at (0: alive)"},
	FieldRetry:     {lua: "F_RETRY", text: true, added: true, doc: "its own retry policy (lib_failures.lua retry_policy; '': its topic's)"},
	FieldTrace:     {lua: "F_TRACE", text: true, added: true, doc: "the producer's W3C traceparent ('': none)"},
	FieldGroup:     {lua: "F_GROUP", text: true, added: true, doc: "its fair group ('': none; lib_groups.lua)"},
	FieldBodyJSON:  {lua: "F_JSON", added: true, doc: "1: its body is a JSON object or array's compact text, shown as JSON; 0: a string"},
	FieldBody:      {lua: "F_BODY", text: true, added: true, absent: true, doc: "its body, when the record holds it (store format 2, a body of at most INLINE_BODY bytes); nil: in the bucket's bodies hash"},
	// Store format 3 (outcomes, lib_outcomes.lua): fields after F_BODY, so a
	// record whose body is in the bodies hash has a hole (cmsgpack packs it
	// as a map; decodeRecord reads both).
	FieldKeep:     {lua: "F_KEEP", added: true, absent: true, doc: "its own keep_completed, seconds (nil: its topic's; 0: deleted at its ack)"},
	FieldEndedAt:  {lua: "F_ENDED_AT", added: true, absent: true, doc: "ms its ack completed it, or it was cancelled (nil: neither)"},
	FieldResult:   {lua: "F_RESULT", text: true, added: true, absent: true, doc: "the result its ack gave, a JSON value's compact text (nil: none)"},
	FieldCancel:   {lua: "F_CANCEL", added: true, absent: true, doc: "1: a cancel was asked while it was reserved; its consumer's next touch, progress or ack ends it cancelled (nil: none; lib_outcomes.lua)"},
	FieldProgress: {lua: "F_PROGRESS", text: true, added: true, absent: true, doc: "its consumer's last progress, a JSON value's compact text (nil: none; progress.lua)"},
	FieldLog:      {lua: "F_LOG", text: true, added: true, absent: true, doc: "its consumer's log lines, a JSON array of [ms, line] (nil: none; progress.lua)"},
	FieldHistory:  {lua: "F_HISTORY", text: true, added: true, absent: true, doc: "its transitions, a JSON array of [ms, event, attempt, detail], its topic's job_history last (nil: none; lib_events.lua note)"},
	FieldTimeout:  {lua: "F_TIMEOUT", added: true, absent: true, doc: "ms a worker's handler may run on it, which the clients' worker loops obey (nil: the worker's own)"},
	FieldWaited:   {lua: "F_WAITED", text: true, added: true, absent: true, doc: "the wake channel its end is announced on, once a broker waits for it (nil: none; lib.lua announce_end)"},
	// Store format 4 (follow-ups, followups.lua): a job's own follow-ups,
	// each an id and its spec as the pool encodes them, a JSON array of
	// [id, spec] pairs the scripts pass on unread.
	FieldThen:   {lua: "F_THEN", text: true, added: true, absent: true, doc: "the follow-ups pushed when its ack completes it, JSON [[id, spec], ...] (nil: none; lib_limits.lua ack_job)"},
	FieldOnDead: {lua: "F_ON_DEAD", text: true, added: true, absent: true, doc: "the follow-ups pushed when it dies, as F_THEN (nil: none; lib_failures.lua kill)"},
	// Store format 5 (dependencies, lib_deps.lua).
	FieldAfter:      {lua: "F_AFTER", text: true, added: true, absent: true, doc: "a job pushed with after: JSON {p: the dependencies' members it still waits for, f: on_dependency_failure, r: their results by member (with_results only)} (nil: none)"},
	FieldDependents: {lua: "F_DEPENDENTS", text: true, added: true, absent: true, doc: "the jobs waiting for it, JSON [[member, topic], ...], told of its end once (nil: none; lib_deps.lua)"},
	// Store format 6 (batches, batches.lua).
	FieldBatch: {lua: "F_BATCH", text: true, added: true, absent: true, doc: "the batch it belongs to: its id, and ' r' when the batch keeps its members' results (nil: none; lib.lua announce_end)"},
	// Issue 49, no new store format: an older broker keeps a field it does
	// not know as it loads and saves a record, and its Go skips it.
	FieldErrors: {lua: "F_ERRORS", text: true, added: true, absent: true, doc: "its failures' errors, the last ERRORS_KEPT, JSON [[attempt, ms, error], ...] oldest first, each cut to ERROR_BYTES (nil: it never failed; lib_failures.lua fail_record)"},
}

// zero is the field's unset value, as a Lua literal.
func (s fieldSpec) zero() string {
	if s.text {
		return "''"
	}
	return "0"
}

// The job reply (contract.lua's reply) is the job's member, its body
// (false when the record holds it, or when the reply carries none), Redis's
// clock, and the job's record as stored: a cmsgpack array of the fields
// above, by their numbers (pool.decodeRecord). One string instead of a
// field each: Redis turns a reply's every element into RESP, and rueidis
// every one into a message, for each job a pop returns.
const (
	ReplyMember = 0
	ReplyBody   = 1
	ReplyNow    = 2
	ReplyRecord = 3
	ReplyLen    = 4
)

// Slot describes one key a topic-scoped script takes, by the name the
// scripts (and package pool) call it.
type Slot struct {
	Name string // the scripts' name: K_<NAME> for a bucket key, t.<name> for a topic key
	Kind string // its Redis type
	Doc  string
}

// lazyTopicKeys are the topic keys few calls read, left out of the table
// topic_keys builds and read through its metatable: a table of at most 16
// fields is a 16-slot hash, one more a 32-slot one, and building that for
// each topic of every call cost an ack and pop 3 µs (docs/performance-log.md,
// "Outcomes").
var lazyTopicKeys = map[string]bool{"completed": true, "cancelled": true, "after": true}

// BucketKeys are a bucket's own keys, KEYS[1..len] of every topic-scoped
// script; pool passes them in this order.
var BucketKeys = []Slot{
	{"jobs", "hash", "member -> cmsgpack job record"},
	{"bodies", "hash", "member -> body"},
	{"due", "zset", "topic -> earliest due ms of its delayed/reserved jobs (may be early, never late)"},
	{"stats", "hash", "bucket counters (current-* and totals)"},
	{"topics", "set", "topic names of this bucket"},
	{"defaults", "hash", "setting -> value: every topic's default settings (this bucket's copy)"},
	{"outbox", "zset", "member -> ms: expired jobs waiting to be pushed to their topic's expire_to"},
	{"fanout", "hash", "parent topic -> its fanout children's names (parent+child), space-separated, sorted"},
	{"topic_index", "zset", "the names of topics, every score 0 (listed in byte order, a page at a time)"},
	{"events", "stream", "the events of the bucket's topics that have events = true (lib_events.lua note, emit; GET /api/v1/events), about EVENTS_MAXLEN kept"},
	{"followups", "zset", "id -> ms it is due: the bucket's follow-ups (followups.lua) and its notices to waiting jobs (lib_deps.lua)"},
	{"followup_specs", "hash", "id -> a follow-up as the pool encodes it, or a notice (lib_deps.lua)"},
}

// TopicKeys are each topic's keys, after the bucket's, for every topic the
// script works on, in this order.
var TopicKeys = []Slot{
	{"ready", "zset", "priority -> member"},
	{"delayed", "zset", "due ms -> member"},
	{"reserved", "zset", "TTR deadline ms -> member"},
	{"buried", "zset", "sequence -> member"},
	{"info", "hash", "paused_until, pause_ms, counters"},
	{"waiting", "string", "the pub/sub channel of brokers with consumers waiting on the topic"},
	{"config", "hash", `"file.<setting>" and "run.<setting>" -> value`},
	{"expires", "zset", "expiry ms -> member: every ready or delayed job that has an expiry (and perhaps some that left)"},
	{"parent_config", "hash", "a fanout child's parent's config (whose settings it inherits); its own otherwise"},
	{"dead", "zset", "dead-at ms -> member: jobs that failed past their max_attempts"},
	{"group_ring", "zset", "group -> its turn (lib_groups.lua): the groups with ready jobs, least recently served first; idle ones (a group_rate token pending, no ready job) scored past IDLE, parked ones past PARKED"},
	{"group_jobs", "zset", "every ready job of a grouped topic, score 0, as group NUL priority NUL member: each group's queue, read BYLEX"},
	{"group_ready", "zset", "group -> its ready jobs (groups with none are not there)"},
	{"group_state", "hash", "r:<group> -> its reserved jobs; t:<group>, a:<group> -> its group_rate tokens and when they were taken"},
	{"completed", "zset", "ms it is removed at (completed ms + its keep_completed) -> member: completed jobs (lib_outcomes.lua)"},
	{"cancelled", "zset", "ms it is removed at (cancelled ms + its keep_completed) -> member: cancelled jobs (lib_outcomes.lua)"},
	{"after", "zset", "pushed ms -> member: jobs waiting for others to complete (WAITING, lib_deps.lua)"},
}

// SlotIndex is where the slot named name is in slots (-1: not there).
func SlotIndex(slots []Slot, name string) int {
	for i, s := range slots {
		if s.Name == name {
			return i
		}
	}
	return -1
}

// StateExpired is the state of a job in its bucket's outbox, on its way to
// another topic (expire_to): the scripts' own, never shown.
const StateExpired job.State = 9

// States are the states a record holds, by the scripts' names; each stored
// one but EXPIRED has its own sorted set (t.<set>) and bucket counter.
var States = []struct {
	State   job.State
	Lua     string
	Set     string // the topic key that holds it ("" none)
	Counter string // the bucket's current-count field ("" none)
}{
	{job.Delayed, "DELAYED", "delayed", "cur_delayed"},
	{job.Ready, "READY", "ready", "cur_ready"},
	{job.Reserved, "RESERVED", "reserved", "cur_reserved"},
	{job.Buried, "BURIED", "buried", "cur_buried"},
	{job.Dead, "DEAD", "dead", "cur_dead"},
	{job.Completed, "COMPLETED", "completed", "cur_completed"},
	{job.Cancelled, "CANCELLED", "cancelled", "cur_cancelled"},
	{job.Waiting, "WAITING", "after", "cur_waiting"},
	{StateExpired, "EXPIRED", "", ""},
}

// Lua is the field's constant in the scripts (F_TOPIC...).
func (f Field) Lua() string {
	if f <= 0 || f >= fieldEnd {
		return ""
	}
	return fields[f].lua
}

// Fields lists the record's fields in order.
// Text says whether the field holds a string (” when unset), else a number.
func (f Field) Text() bool { return fields[f].text }

func Fields() []Field {
	out := make([]Field, 0, fieldEnd-1)
	for f := FieldState; f < fieldEnd; f++ {
		out = append(out, f)
	}
	return out
}

// Ops are batch.lua's operations: each kind's arguments by name, in the
// order OpArgs puts them (batch.lua reads them into op.a.<name>; the
// other kinds' are described in its header). A push is followed by a
// member for each of its fanout children (op.children). A push's:
//   - member, priority, ttr (ms), delay (ms), body, client_id (empty: none);
//   - expires (ms, 0: never; the topic's max_age caps it);
//   - retry (its policy, empty: the topic's; lib_failures.lua retry_policy);
//   - trace (W3C traceparent, empty: none);
//   - unique_key (its place in KEYS, empty: none), unique_mode, unique_for;
//   - group (empty: none, or the topic's group_from);
//   - schedule_key (its hash's place in KEYS; empty: not a schedule's
//     fire), schedule_due, schedule_next, schedule_name, overlap;
//   - json ('1': the body is a JSON object or array's text, F_JSON; a
//     fanout child's copy and a replaced job take it with the body);
//   - keep (its own keep_completed, seconds, empty: its topic's; F_KEEP);
//   - timeout (ms a worker's handler may run on it, empty: none; F_TIMEOUT);
//   - then_list, dead_list (its follow-ups, empty: none; F_THEN, F_ON_DEAD);
//   - after (what it waits for, empty: nothing; lib_deps.lua);
//   - batch (its batch, empty: none; F_BATCH).
//
// lib_jobs.lua's OP_ARGS.push.record makes a pushed job's record of them
// on every path: a new field a push gives is a name here and a line there
// (and the plain push carries it: ScriptArgs's push_plain row follows this
// one, less PushGeneral's).
var Ops = map[string][]string{
	"push": {"member", "priority", "ttr", "delay", "body", "client_id", "expires", "retry", "trace",
		"unique_key", "unique_mode", "unique_for", "group",
		"schedule_key", "schedule_due", "schedule_next", "schedule_name", "overlap", "json", "keep", "timeout",
		"then_list", "dead_list", "after", "batch"},
	"delete":  {"member", "attempt", "mode", "result"},
	"pop":     {"mode", "more"},
	"pop_n":   {"mode", "n", "more"},
	"ack_pop": {"member", "attempt", "more", "result"},
}

// PushGeneral are the push's arguments that only batch.lua's general path
// reads, each with its value when a push does not use it: a push that uses
// one goes the general way (pool/plain.go plainPush, lib_lean.lua's
// check of a push; TestShortPathChecksPushGeneral). pushKeyArgs are the
// arguments that mean something only with a unique key or a schedule's
// (unique_key, schedule_key). The plain push (push_plain.lua) takes the
// rest, in Ops's order (pushPlainArgs): a new argument a plain push may
// carry needs no row of its own.
var (
	PushGeneral = map[string]string{"expires": "0", "unique_key": "", "group": "", "schedule_key": "",
		"then_list": "", "dead_list": "", "after": "", "batch": ""}
	pushKeyArgs = []string{"unique_mode", "unique_for", "schedule_due", "schedule_next", "schedule_name", "overlap"}
)

// pushPlainArgs is push_plain's row of ScriptArgs: its topic, then a
// push's arguments (Ops) less PushGeneral's and pushKeyArgs.
func pushPlainArgs() []string {
	out := []string{"topic"}
	for _, name := range Ops["push"] {
		if _, general := PushGeneral[name]; !general && !slices.Contains(pushKeyArgs, name) {
			out = append(out, name)
		}
	}
	return out
}

// OpArgIndex is where argument name is among kind's (OpArgs's order).
func OpArgIndex(kind, name string) int {
	at := slices.Index(Ops[kind], name)
	if at < 0 {
		panic(fmt.Sprintf("lua: %s takes no %s", kind, name))
	}
	return at
}

// OpArgs lays out an operation's arguments, given as name, value pairs, in
// the order batch.lua reads them. Every argument must be given once: a
// missing, repeated or unknown one is a bug in the caller, and panics.
func OpArgs(kind string, named ...string) []string {
	names, ok := Ops[kind]
	if !ok || len(named) != 2*len(names) {
		panic(fmt.Sprintf("lua: %s takes %v, got %d values", kind, names, len(named)))
	}
	out := make([]string, len(names))
	set := 0
	for i := 0; i < len(named); i += 2 {
		at := slices.Index(names, named[i]) // a few short names: cheaper than a map
		if at < 0 || set&(1<<at) != 0 {
			// named itself stays out of the message: it would escape, and
			// every call would allocate it.
			panic(fmt.Sprintf("lua: %s takes %v, got %q unknown or twice", kind, names, strings.Clone(named[i])))
		}
		set |= 1 << at
		out[at] = named[i+1]
	}
	return out
}

// TopicStat is a field of topic_stats.lua's reply for one topic: its
// position there (0-based, as Go counts); the topic's effective settings
// follow the last, as setting, value pairs.
type TopicStat int

// topic_stats.lua's fields (topicStats says what each holds).
const (
	StatKnown TopicStat = iota
	StatNow
	StatReady
	StatUrgent
	StatDelayed
	StatReserved
	StatBuried
	StatPausedUntil
	StatPauseMS
	StatTotalJobs
	StatTotalReserves
	StatTotalDeletes
	StatTotalPauses
	StatBytes
	StatTotalDiscarded
	StatTotalExpired
	StatOldestReady
	StatChildren
	StatDead
	StatTotalFailures
	StatTotalDead
	StatDeadRetried
	StatDeadDropped
	StatCreated
	StatTokens
	StatTotalLimited
	StatLimitedMS
	StatGroups
	StatBusiestGroups
	StatGroupsForgotten
	StatCompleted
	StatTotalCompleted
	StatCancelled
	StatTotalCancelled
	// TopicStatsLen is where the settings start.
	TopicStatsLen
)

// topicStats are the fields' constants in the scripts and what they hold.
var topicStats = [TopicStatsLen][2]string{
	StatKnown:           {"S_KNOWN", "1 if the topic is listed in its bucket, else 0 (the rest is then empty)"},
	StatNow:             {"S_NOW", "Redis's clock, ms"},
	StatReady:           {"S_READY", "ready jobs"},
	StatUrgent:          {"S_URGENT", "ready jobs below the urgent priority"},
	StatDelayed:         {"S_DELAYED", "delayed jobs"},
	StatReserved:        {"S_RESERVED", "reserved jobs"},
	StatBuried:          {"S_BURIED", "buried jobs"},
	StatPausedUntil:     {"S_PAUSED_UNTIL", "ms the topic is paused until (0: not paused)"},
	StatPauseMS:         {"S_PAUSE_MS", "the last pause's length, ms"},
	StatTotalJobs:       {"S_TOTAL_JOBS", "jobs pushed"},
	StatTotalReserves:   {"S_TOTAL_RESERVES", "deliveries"},
	StatTotalDeletes:    {"S_TOTAL_DELETES", "acks and deletes"},
	StatTotalPauses:     {"S_TOTAL_PAUSES", "pauses"},
	StatBytes:           {"S_BYTES", "bytes of the bodies it holds"},
	StatTotalDiscarded:  {"S_TOTAL_DISCARDED", "jobs discarded to make room (discard_old_when_full)"},
	StatTotalExpired:    {"S_TOTAL_EXPIRED", "jobs expired"},
	StatOldestReady:     {"S_OLDEST_READY", "created ms of the next ready job (0: none)"},
	StatChildren:        {"S_CHILDREN", "its fanout children, space-separated ('' none)"},
	StatDead:            {"S_DEAD", "dead jobs"},
	StatTotalFailures:   {"S_TOTAL_FAILURES", "failures"},
	StatTotalDead:       {"S_TOTAL_DEAD", "jobs that died"},
	StatDeadRetried:     {"S_DEAD_RETRIED", "dead jobs retried"},
	StatDeadDropped:     {"S_DEAD_DROPPED", "dead jobs dropped (dead_retention, max_dead)"},
	StatCreated:         {"S_CREATED", "ms the topic came to be, its counters from zero (0: not noted)"},
	StatTokens:          {"S_TOKENS", "whole tokens its rate has now (-1: no rate; lib_limits.lua)"},
	StatTotalLimited:    {"S_TOTAL_LIMITED", "looks of pops that found its ready jobs held back by its rate or max_reserved"},
	StatLimitedMS:       {"S_LIMITED_MS", "ms consumers' pops spent held back by its limits (note_held.lua)"},
	StatGroups:          {"S_GROUPS", "its groups with ready jobs (0: none, or not grouped; lib_groups.lua)"},
	StatBusiestGroups:   {"S_BUSIEST_GROUPS", "its groups with the most ready jobs, at most 10, most first: name TAB ready TAB reserved, a line each"},
	StatGroupsForgotten: {"S_GROUPS_FORGOTTEN", "idle groups whose group_rate hold was forgotten at group_max_parked (lib_groups.lua)"},
	StatCompleted:       {"S_COMPLETED", "completed jobs kept (keep_completed)"},
	StatTotalCompleted:  {"S_TOTAL_COMPLETED", "acks that kept their job completed"},
	StatCancelled:       {"S_CANCELLED", "cancelled jobs kept (keep_completed)"},
	StatTotalCancelled:  {"S_TOTAL_CANCELLED", "jobs cancelled"},
}
