package web

import (
	"strings"
	"testing"
	"time"
)

// POST /dashboard/logout needs no token, so it remembers only sessions that
// verify: cookies made up by anyone cost nothing (800 logouts with 1 MB
// cookies held 940 MB before, never freed). A real session still ends.
func TestLogoutRemembersOnlyRealSessions(t *testing.T) {
	ss := newSessions("a-token")
	now := time.Now()
	real := ss.open(now.Add(time.Hour))
	for _, bogus := range []string{
		"9999999999." + strings.Repeat("x", 1<<20) + ".mac",   // a forged MAC
		newSessions("another-token").open(now.Add(time.Hour)), // another token's
		ss.open(now.Add(-time.Second)),                        // expired
		"no dots", "", "..",
	} {
		for range 10 {
			ss.close(bogus, now)
		}
	}
	if n := len(ss.closed); n != 0 {
		t.Fatalf("%d made-up sessions remembered", n)
	}
	if !ss.valid(real, now) {
		t.Fatal("a real session is not valid")
	}
	ss.close(real, now)
	if ss.valid(real, now) || len(ss.closed) != 1 {
		t.Fatalf("a real session after its logout: valid %v, %d remembered", ss.valid(real, now), len(ss.closed))
	}
}
