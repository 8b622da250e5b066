package lua

import (
	"fmt"
	"slices"
	"strings"
)

// ScriptArgs names every script's arguments, in the order they come: the
// contract between pool's calls (Args) and the scripts, which read
// ARGV[A.<name>] (A is the script's own row, which the library and Source
// set before its body; contract.lua holds the rows as ARGS). A library
// script's ARGV[1] is always the calling broker (lib.lua begin), so its
// names start at ARGV[2]; a standalone script's start at ARGV[1]. A script
// that does several things has a row per mode ("schedule set"): its first
// argument is the mode's word, the mode's names follow, and the script
// reads them as ARGV[A.<mode>.<name>]. A last name ending in "..." is the
// place where a list of any length starts (ARGV[A.members] to #ARGV),
// which the caller appends after Args's.
var ScriptArgs = map[string][]string{
	"batch":            {"n", "topics..."}, // then the operations (Ops)
	"bury":             {"member", "topic", "attempt", "priority"},
	"cancel":           {"member", "topic"},
	"check":            {"topic"},
	"dead_retry":       {"topic", "set", "n", "members..."},
	"end_wait":         {"member", "channel"},
	"expire":           {"topic", "n"},
	"fail":             {"member", "topic", "attempt", "error", "r"},
	"deps register":    {"dependent", "topic", "members..."},
	"deps tell":        {"member", "topic", "dependency", "how", "result"},
	"batches open":     {"id", "state", "meta", "with_results", "retention", "on_complete", "on_success", "on_death", "deadline", "members..."},
	"batches add":      {"id", "deadline", "max", "members..."},
	"batches stored":   {"id", "created", "members..."},
	"batches drop":     {"id", "members..."},
	"batches close":    {"id"},
	"batches tell":     {"id", "ends..."},
	"batches cancel":   {"id"},
	"batches remove":   {"id"},
	"batches sweep":    {"id", "n"},
	"batches due":      {"id"},
	"followups ack":    {"member", "topic", "attempt", "result", "entries", "grace"},
	"followups take":   {"n", "lease"},
	"followups done":   {"ids..."},
	"followups later":  {"ms", "max", "ids..."},
	"forget_topic":     {"topic", "force"},
	"job_list":         {"topic", "set", "offset", "limit", "preview"},
	"kick":             {"topic", "n", "kind"},
	"kick_job":         {"member", "topic"},
	"migrate":          {"cursor", "n"},
	"note_held":        {"topic", "ms"},
	"outbox take":      {"n"},
	"outbox done":      {"members..."},
	"pause":            {"topic", "ms", "create"},
	"peek":             {"member"},
	"peek_topic":       {"topic", "set"},
	"progress":         {"member", "topic", "attempt", "progress", "log"},
	"purge":            {"topic", "n", "states"},
	"push_plain":       pushPlainArgs(), // topic, then a push's (Ops) less PushGeneral's
	"pop_plain":        {"topic", "more"},
	"pop_best_plain":   {"more", "deadline", "counts", "topics..."},
	"ack_plain":        {"topic", "member", "attempt"},
	"ack_pop_plain":    {"topic", "member", "attempt", "pop_topic", "more"},
	"reference":        {"topic"},
	"release":          {"member", "topic", "attempt", "priority", "delay", "mode"},
	"reserve_job":      {"member", "topic"},
	"schedule set":     {"name", "spec", "file", "run", "next", "keep"},
	"schedule delete":  {"name"},
	"schedule orphan":  {"name", "fresh", "put_off"},
	"schedule advance": {"name", "due", "next"},
	"tick":             {"topic", "n"},
	"topic_stats":      {"urgent", "topics..."},
	"touch":            {"member", "topic", "attempt"},
	"unpark_groups":    {"topic", "n"},
	"update_job":       {"member", "topic", "delay", "priority", "body", "body_given", "json"},
	// Standalone scripts: no caller, names from ARGV[1].
	"add_totals":        {"seq", "ttl", "triples..."},
	"announce":          {"origin", "reads", "ttl", "version"},
	"claim_alias":       {"client_id", "member", "stale"},
	"drop_alias":        {"pairs..."},
	"due_topics":        {"n"},
	"history":           {"every", "n", "ttl", "f", "samples..."},
	"next_ids":          {"block", "floor_from", "per_ms"},
	"settings":          {"prefix", "replace", "mark", "topic", "pairs..."},
	"status read":       {"origin", "ttl", "now", "next", "at"},
	"status set":        {"scope", "origin", "status", "grace", "ttl", "create"},
	"topic_index add":   {"from", "n"},
	"topic_index prune": {"from", "n"},
	"topic_patterns":    {"pairs..."},
	"unlock":            {"token"},
}

// firstArg is the place (1-based, as Lua counts) of script's first named
// argument, its mode's word aside.
func firstArg(script string) int {
	name, _, _ := strings.Cut(script, " ")
	if standalone[name] {
		return 1
	}
	return 2
}

// Args lays out script's arguments (a ScriptArgs row: "touch", or a mode,
// "schedule set"), given as name, value pairs, in the order the script
// reads them: the mode's word first for a mode. It leaves out the caller,
// which the pool puts before them for a library script, and a list's
// values ("members..."), which the caller appends. Every other name must
// be given once: a missing, repeated or unknown one is a bug in the caller,
// and panics.
func Args(script string, named ...string) []string { return AppendArgs(nil, script, named...) }

// AppendArgs is Args appended to dst (a library script's caller, for one).
func AppendArgs(dst []string, script string, named ...string) []string {
	names, ok := ScriptArgs[script]
	if !ok {
		panic(fmt.Sprintf("lua: no arguments named for script %q", script))
	}
	fixed := names
	if n := len(names); n > 0 && strings.HasSuffix(names[n-1], "...") {
		fixed = names[:n-1]
	}
	if len(named) != 2*len(fixed) {
		panic(fmt.Sprintf("lua: %s takes %v, got %d values", script, fixed, len(named)))
	}
	_, mode, moded := strings.Cut(script, " ")
	out := slices.Grow(dst, len(fixed)+1)
	if moded {
		out = append(out, mode)
	}
	base := len(out)
	out = out[:base+len(fixed)]
	set := make([]bool, len(fixed))
	for i := 0; i < len(named); i += 2 {
		at := slices.Index(fixed, named[i])
		if at < 0 || set[at] {
			panic(fmt.Sprintf("lua: %s takes %v, got %q unknown or twice", script, fixed, strings.Clone(named[i])))
		}
		set[at] = true
		out[base+at] = named[i+1]
	}
	return out
}

// argsTable is script's row of ARGS as a Lua table constructor: each
// name's place ({member = 2, topic = 3}), a list's name without its dots;
// for a script of modes, mode = its word's place and a table per mode.
func argsTable(script string) string {
	row := func(names []string, from int) string {
		var parts []string
		for i, n := range names {
			parts = append(parts, fmt.Sprintf("%s = %d", strings.TrimSuffix(n, "..."), from+i))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	if names, ok := ScriptArgs[script]; ok {
		return row(names, firstArg(script))
	}
	var modes []string
	for key := range ScriptArgs {
		if name, mode, ok := strings.Cut(key, " "); ok && name == script {
			modes = append(modes, mode)
		}
	}
	if len(modes) == 0 {
		return ""
	}
	slices.Sort(modes)
	parts := []string{fmt.Sprintf("mode = %d", firstArg(script))}
	for _, mode := range modes {
		parts = append(parts, fmt.Sprintf("%s = %s", mode, row(ScriptArgs[script+" "+mode], firstArg(script)+1)))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
