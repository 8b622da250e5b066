package webhook

import (
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gmq/gmq/internal/jobjson"
)

// TestSignKnownVector signs the Standard Webhooks specification's example,
// so that any receiver's library of it accepts gmq's signatures.
func TestSignKnownVector(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	got, err := Sign(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, []byte(`{"test": 2432232314}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Fatalf("Sign = %q, want %q", got, want)
	}
	two, err := Sign(secret+" whsec_dGhlIG90aGVyIHNlY3JldCBrZXk=", "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, []byte(`{"test": 2432232314}`))
	if err != nil {
		t.Fatal(err)
	}
	if sigs := strings.Fields(two); len(sigs) != 2 || sigs[0] != got || !strings.HasPrefix(sigs[1], "v1,") || sigs[1] == got {
		t.Fatalf("two secrets signed %q", two)
	}
	if _, err := Sign("not-a-secret", "1", 1, nil); err == nil {
		t.Fatal("a secret without whsec_ signed")
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		header string
		want   time.Duration
		ok     bool
	}{
		{"", 0, false},
		{"30", 30 * time.Second, true},
		{" 0 ", 0, true},
		{"-5", 0, true},
		{"99999999999", 4294967295 * time.Second, true},
		{"Wed, 02 Dec 2026 10:01:00 GMT", time.Minute, true},
		{"Wed, 02 Dec 2026 09:00:00 GMT", 0, true},
		{"soon", 0, false},
		{"1.5", 0, false},
	} {
		got, ok := retryAfter(tc.header, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("retryAfter(%q) = %v, %v; want %v, %v", tc.header, got, ok, tc.want, tc.ok)
		}
	}
}

func TestAnswerResult(t *testing.T) {
	for _, tc := range []struct {
		body  string
		whole bool
		want  string
	}{
		{"", true, ""},
		{"  \n", true, ""},
		{`{"ok": true, "n": [1, 2]}`, true, `{"ok":true,"n":[1,2]}`},
		{"done", true, `"done"`},
		{"<html>ok</html>", true, `"<html>ok</html>"`},
		{"\xff\xfe", true, "\"\ufffd\""},
		// JSON some client could not read back (issue 49's rule) is kept as its text
		{`{"s":"\ud800"}`, true, `"{\"s\":\"\\ud800\"}"`},
		{`[1, 1e400]`, true, `"[1, 1e400]"`},
		{`{"s":"\ud83d\ude00"}`, true, `{"s":"\ud83d\ude00"}`},
		{`{"cut":`, false, ""},
		{"null", true, "null"},
		// nested past jobjson.MaxBodyDepth: a push would refuse it, and Python's json.loads fails on it
		{deep(jobjson.MaxBodyDepth), true, deep(jobjson.MaxBodyDepth)},
		{deep(jobjson.MaxBodyDepth + 1), true, strconv.Quote(deep(jobjson.MaxBodyDepth + 1))},
		{deep(3000), true, strconv.Quote(deep(3000))},
	} {
		if got := (answer{body: []byte(tc.body), whole: tc.whole}).result(); got != tc.want {
			t.Errorf("result of %q = %s, want %s", tc.body, got, tc.want)
		}
	}
}

// deep is an array nested n deep.
func deep(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

func TestCutReason(t *testing.T) {
	if got := cut("short"); got != "short" {
		t.Fatalf("cut(short) = %q", got)
	}
	long := strings.Repeat("é", 1000) // 2 bytes each: a cut may fall inside one
	got := cut(long)
	if len(got) > 304 || !strings.HasSuffix(got, "…") || !utf8.ValidString(got) {
		t.Fatalf("cut of %d bytes = %d bytes, valid %v", len(long), len(got), utf8.ValidString(got))
	}
}

// FuzzRetryAfter: any header reads as a delay within bounds, or none.
func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"30", "-5", "Wed, 02 Dec 2026 10:01:00 GMT", "99999999999999999999", "1e9", ""} {
		f.Add(s)
	}
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, header string) {
		d, ok := retryAfter(header, now)
		if ok && (d < 0 || d > 4294967295*time.Second) {
			t.Fatalf("retryAfter(%q) = %v", header, d)
		}
	})
}
