package jobjson

import (
	"errors"
	"strings"
	"testing"

	"github.com/gmq/gmq/job"
)

func TestParseToken(t *testing.T) {
	tests := []struct {
		token string
		want  job.Delivery // zero: refused
	}{
		{"228769930762696001.2", job.Delivery{ID: 228769930762696001, Attempt: 2}},
		{"1.1", job.Delivery{ID: 1, Attempt: 1}},
		{"18446744073709551615.2147483647", job.Delivery{ID: 1<<64 - 1, Attempt: 1<<31 - 1}},
		{"007.01", job.Delivery{ID: 7, Attempt: 1}},
		{"", job.Delivery{}},
		{"17", job.Delivery{}},                            // no attempt
		{"17.", job.Delivery{}},                           // an empty attempt
		{".2", job.Delivery{}},                            // an empty number
		{"17.0", job.Delivery{}},                          // attempts start at 1
		{"0.1", job.Delivery{}},                           // no job is numbered 0
		{"17.2.3", job.Delivery{}},                        // three parts
		{"17.-2", job.Delivery{}},                         // a sign
		{"+17.2", job.Delivery{}},                         // a sign
		{" 17.2", job.Delivery{}},                         // spaces
		{"17.2 ", job.Delivery{}},                         // spaces
		{"1e3.2", job.Delivery{}},                         // not digits
		{"order-42.1", job.Delivery{}},                    // a client id is no number
		{"18446744073709551616.1", job.Delivery{}},        // the number overflows
		{"17.2147483648", job.Delivery{}},                 // the attempt overflows
		{"17.99999999999999999999999", job.Delivery{}},    // far over
		{"١٧.٢", job.Delivery{}},                          // other scripts' digits
		{strings.Repeat("9", 500) + ".1", job.Delivery{}}, // long
	}
	for _, tt := range tests {
		got, err := ParseToken(tt.token)
		if tt.want.IsZero() {
			if err == nil || !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), "token") {
				t.Errorf("ParseToken(%q) = %v, %v; want a bad request naming token", tt.token, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseToken(%q) = %v, %v; want %v", tt.token, got, err, tt.want)
		}
	}
}

func TestTokenField(t *testing.T) {
	for _, tt := range []struct {
		json string
		want job.Delivery
		bad  bool
	}{
		{`{}`, job.Delivery{}, false},
		{`{"token":null}`, job.Delivery{}, false},
		{`{"Token":"5.3"}`, job.Delivery{ID: 5, Attempt: 3}, false},
		{`{"token":53}`, job.Delivery{}, true}, // a number is no token
		{`{"token":""}`, job.Delivery{}, true},
	} {
		f, err := Decode([]byte(tt.json))
		if err != nil {
			t.Fatal(err)
		}
		got, err := f.Token()
		if (err != nil) != tt.bad || got != tt.want {
			t.Errorf("%s: Token() = %v, %v; want %v (refused: %v)", tt.json, got, err, tt.want, tt.bad)
		}
	}
}

// FuzzParseToken: a token is refused as a bad request, or read back as a
// delivery whose own token reads back the same (the form pops hand out).
func FuzzParseToken(f *testing.F) {
	for _, s := range []string{"228769930762696001.2", "1.1", "17.0", "0.1", "17", "17.2.3", "-1.1",
		"18446744073709551616.1", "17.2147483648", "007.01", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseToken(s)
		if err != nil {
			if !errors.Is(err, ErrBadRequest) {
				t.Fatalf("ParseToken(%q): error %v is not a bad request", s, err)
			}
			return
		}
		if d.ID == 0 || d.Attempt < 1 {
			t.Fatalf("ParseToken(%q) accepted %+v", s, d)
		}
		again, err := ParseToken(d.Token())
		if err != nil || again != d {
			t.Fatalf("ParseToken(%q) = %+v, whose token %q reads back as %+v, %v", s, d, d.Token(), again, err)
		}
	})
}
