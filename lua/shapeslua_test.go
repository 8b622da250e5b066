package lua

import (
	"slices"
	"testing"
)

// The constructors lay a reply out as the row says, a job value's table
// and a list's made the reply rather than copied into one of its own.
func TestReplyConstructors(t *testing.T) {
	for _, tc := range []struct{ shape, status, want string }{
		{"ack", "OK", "function(cid, dropped, kept_ms) return {'OK', cid, dropped, kept_ms} end"},
		{"job", "NOT_FOUND", "function() return {'NOT_FOUND'} end"},
		{"pop", "OK", "function(more, job) job[1], job[2], job[3], job[4], job[5], job[6] = 'OK', more, job[1], job[2], job[3], job[4] return job end"},
		{"ack_pop", "OK", "function(cid, dropped, pop) if not pop then return {'OK', cid, dropped} end " +
			"for i = #pop, 1, -1 do pop[i + 3] = pop[i] end pop[1], pop[2], pop[3] = 'OK', cid, dropped return pop end"},
		{"fail", "OK", "function(job, dropped) job[1], job[2], job[3], job[4], job[5] = 'OK', job[1], job[2], job[3], job[4] " +
			"if dropped then for i = 1, #dropped do job[5 + i] = dropped[i] end end return job end"},
		{"kick", "", "function(kicked, kind) return {kicked, kind} end"},
		{"deps_register", "", "function(answers) return answers or {} end"},
	} {
		rows, err := ReplyRows()
		if err != nil {
			t.Fatal(err)
		}
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
