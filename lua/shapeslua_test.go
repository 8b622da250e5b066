package lua

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestRepliesBuiltByShape: a script builds every reply with contract.lua's
// REPLY (a row of ReplyShapes), never by laying out a status and values of
// its own: R.<NAME> appears only where a status is compared, or as the
// value of a "status" reply (a status alone); no reply is a table literal
// led by a status; every constructor a script calls is a row's.
func TestRepliesBuiltByShape(t *testing.T) {
	rows, err := ReplyRows()
	if err != nil {
		t.Fatal(err)
	}
	var calls []string
	for _, row := range rows {
		calls = append(calls, strings.TrimPrefix(row.Call, "REPLY."))
	}
	status := regexp.MustCompile(`(==\s*|~=\s*|REPLY\.status\(\s*)?\bR\.[A-Z_]+`)
	literal := regexp.MustCompile(`\{\s*R\.[A-Z_]+|table\.insert\([^,]+,\s*1,\s*R\.`)
	for _, file := range luaFiles(t) {
		if file == ContractFile {
			continue
		}
		for i, line := range strings.Split(codeOf(read(file)), "\n") {
			if m := literal.FindString(line); m != "" {
				t.Errorf("%s:%d: %q lays a reply out by hand: build it with REPLY (lua.ReplyShapes)", file, i+1, strings.TrimSpace(line))
				continue
			}
			for _, m := range status.FindAllStringSubmatch(line, -1) {
				if m[1] == "" {
					t.Errorf("%s:%d: %q: a status outside a comparison: build the reply with REPLY (lua.ReplyShapes)", file, i+1, strings.TrimSpace(line))
				}
			}
		}
		for _, used := range repliesOf(codeOf(read(file))) {
			if !slices.Contains(calls, used) {
				t.Errorf("%s calls REPLY.%s, which no row of lua.ReplyShapes is", file, used)
			}
		}
	}
}

// The constructors lay a reply out as the row says, in one table
// constructor: a job value as its four values, a list that takes the rest
// as the last arguments.
func TestReplyConstructors(t *testing.T) {
	rows, err := ReplyRows()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ shape, status, want string }{
		{"ack", "OK", "function(cid, dropped, kept_ms) return {'OK', cid, dropped, kept_ms} end"},
		{"job", "NOT_FOUND", "function() return {'NOT_FOUND'} end"},
		{"pop", "OK", "function(more, job_member, job_body, job_now, job_record) return {'OK', more, job_member, job_body, job_now, job_record} end"},
		{"ack_pop", "OK", "function(cid, dropped, ...) return {'OK', cid, dropped, ...} end"},
		{"cancel", "OK", "function(cid, job_member, job_body, job_now, job_record, dropped) " +
			"return {'OK', cid, job_member, job_body, job_now, job_record, dropped} end"},
		{"kick", "", "function(kicked, kind) return {kicked, kind} end"},
		{"deps_register", "", "function(...) return {...} end"},
	} {
		i := slices.IndexFunc(rows, func(r ReplyRow) bool { return r.Shape == tc.shape && r.Status == tc.status })
		if i < 0 {
			t.Errorf("no row %s %s", tc.shape, tc.status)
			continue
		}
		if got := rows[i].constructor(); got != tc.want {
			t.Errorf("%s %s:\n got %s\nwant %s", tc.shape, tc.status, got, tc.want)
		}
	}
}

// A standalone script is given the constructors it calls, and no others.
func TestStandaloneReplies(t *testing.T) {
	src := Source("claim_alias")
	for _, want := range []string{"REPLY.claim_alias = {", "  EXISTS = function(member, age_ms)", "  OK = function()"} {
		if !strings.Contains(src, want) {
			t.Errorf("claim_alias is not given %q:\n%s", want, src[:min(len(src), 600)])
		}
	}
	if strings.Contains(src, "REPLY.pop") || strings.Contains(src, "local R =") {
		t.Errorf("claim_alias is given what it does not use:\n%s", src[:min(len(src), 600)])
	}
	if got := repliesOf("REPLY.status_set.OK(1) REPLY.status_read(1) REPLY.status_set.OK(2)"); !slices.Equal(got, []string{"status_set.OK", "status_read"}) {
		t.Errorf("repliesOf: %q", got)
	}
}
