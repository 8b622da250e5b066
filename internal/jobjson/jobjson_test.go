package jobjson

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// names is an object of n distinct top-level names, then extra.
func names(n int, extra string) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		fmt.Fprintf(&b, `"k%d":1,`, i)
	}
	b.WriteString(extra + "}")
	return b.String()
}

func TestDecodeRefusesRepeatedNames(t *testing.T) {
	tests := []struct {
		json string
		dup  bool
	}{
		{`{"topic":"a","body":"x"}`, false},
		{`{"topic":"a","Topic":"b"}`, true},
		{`{"topic":"a","TOPIC":"b"}`, true},
		{`{"\u0074opic":"a","topic":"b"}`, true},           // an escape that spells the same name
		{`{"a":{"x":1,"X":2},"b":[{"y":1,"y":2}]}`, false}, // only the top level is matched
		{`{"a":"}{\",\"a\":","b":"[\"a\":1]"}`, false},     // braces, quotes and commas inside values
		{`{"a":1, "b" : 2 ,"A" :3}`, true},                 // spacing
		{`{"s":"\\","S":1}`, true},                         // a value ending in an escaped backslash
		// Past the first 16 names they are matched through a set (each
		// compared with every earlier one was quadratic: 5 s for 40,000).
		{names(17, `"K3":2`), true},
		{names(16, `"z":2`), false},
		{names(5000, `"K4999":2`), true},
		{names(5000, `"K0":2`), true},
		{names(5000, `"\u006b42":2`), true},
		{names(5000, `"k5000":2`), false},
	}
	for _, tt := range tests {
		_, err := Decode([]byte(tt.json))
		if got := err != nil; got != tt.dup || (err != nil && !errors.Is(err, ErrBadRequest)) {
			t.Errorf("Decode(%s) = %v, want a repeated-name error: %v", tt.json, err, tt.dup)
		}
	}
}

func TestNumbersAsJSONWritesThem(t *testing.T) {
	for text, ok := range map[string]bool{
		"0": true, "1800": true, "-1": true, "2.5": true, "1e3": true, "1E-2": true, "007": true,
		"0x1p4": false, "1_000": false, "Inf": false, "NaN": false, "+1": false, ".5": false, "5.": false, "1e": false, "": false,
	} {
		if got := isDecimal(text); got != ok {
			t.Errorf("isDecimal(%q) = %v, want %v", text, got, ok)
		}
	}
}

func TestUnknownFieldsNamed(t *testing.T) {
	tests := []struct {
		json, says string // says: "" when accepted
	}{
		{`{"topic":"t","body":"x","delay":"5","TTR":"30","id":"a-1"}`, ""},                              // the original gmq's producers
		{`{"Topic":"t","BODY":"x","Ttr":1,"PRI":2,"Expires_In":3,"TraceParent":null,"retry":null}`, ""}, // any case
		{`{"topic":"t","body":"x","dealy":5}`, `unknown field "dealy" (a job has after, body, delay, `},
		{`{"topic":"t","body":"x","b":1,"a":2}`, `unknown fields "a", "b" (a job has`},
		{`{"topic":"t","body":"x","priority":1,"pri":2}`, "give priority or pri, not both"},
		{`{"topic":"t","body":"x","retry":{"Jitter":true,"tries":2}}`, `retry: bad request: unknown field "tries" (a retry policy has backoff, base, jitter, max, max_attempts;`},
	}
	for _, tt := range tests {
		f, err := Decode([]byte(tt.json))
		if err == nil {
			_, err = Job(f, Defaults{})
		}
		switch {
		case tt.says == "" && err != nil:
			t.Errorf("%s: %v, want it accepted", tt.json, err)
		case tt.says != "" && (err == nil || !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), tt.says)):
			t.Errorf("%s: %v, want a bad request saying %q", tt.json, err, tt.says)
		}
	}
}

// A body is a string, kept as it is whatever its text, or a JSON object or
// array, kept as its compact text and marked JSON; anything else is refused
// by what a body may be. A change (PATCH, Service.Update) reads it alike.
func TestBody(t *testing.T) {
	tests := []struct {
		name, body string
		want       string
		asJSON     bool
		says       string // the error's text; "" when accepted
	}{
		{"a string", `"hello"`, "hello", false, ""},
		{"an empty string", `""`, "", false, ""},
		{"a string holding JSON", `"{\"to\":\"a\"}"`, `{"to":"a"}`, false, ""},
		{"an object", `{"to":"a","n":1}`, `{"to":"a","n":1}`, true, ""},
		{"an object, compacted", "{ \"to\" : \"a\",\n\t\"tags\": [ 1, 2 ] }", `{"to":"a","tags":[1,2]}`, true, ""},
		{"escapes kept as given", `{"s":"caf\u00e9 \"q\""}`, `{"s":"caf\u00e9 \"q\""}`, true, ""},
		{"an empty object", `{}`, `{}`, true, ""},
		{"an array", `[1, "two", {"three": 3}]`, `[1,"two",{"three":3}]`, true, ""},
		{"an empty array", `[ ]`, `[]`, true, ""},
		{"a number", `42`, "", false, "body must be a string, an object or an array, got 42"},
		{"true", `true`, "", false, "body must be a string, an object or an array, got true"},
		{"false", `false`, "", false, "body must be a string, an object or an array, got false"},
		{"null", `null`, "", false, "body must be a string, an object or an array, got null"},
		{"nested 64 deep", strings.Repeat("[", 64) + strings.Repeat("]", 64), strings.Repeat("[", 64) + strings.Repeat("]", 64), true, ""},
		{"nested 65 deep", strings.Repeat("[", 65) + strings.Repeat("]", 65), "", false, "nested 65 deep, at most 64"},
		{"brackets in strings do not nest", `{"s":"` + strings.Repeat("[{", 100) + `\"["}`, `{"s":"` + strings.Repeat("[{", 100) + `\"["}`, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Decode([]byte(`{"topic":"t","body":` + tt.body + `}`))
			if err != nil {
				t.Fatal(err)
			}
			j, err := Job(f, Defaults{})
			u, uerr := f.Update("a job's update", "topic")
			for _, got := range []struct {
				body   string
				asJSON bool
				err    error
			}{{j.Body, j.BodyJSON, err}, {deref(u.Body), u.BodyJSON, uerr}} {
				switch {
				case tt.says != "" && (got.err == nil || !errors.Is(got.err, ErrBadRequest) || !strings.Contains(got.err.Error(), tt.says)):
					t.Errorf("%s: %v, want a bad request saying %q", tt.body, got.err, tt.says)
				case tt.says == "" && got.err != nil:
					t.Errorf("%s: %v, want it accepted", tt.body, got.err)
				case tt.says == "" && (got.body != tt.want || got.asJSON != tt.asJSON):
					t.Errorf("%s: body %q (JSON %v), want %q (JSON %v)", tt.body, got.body, got.asJSON, tt.want, tt.asJSON)
				}
			}
		})
	}
	f, err := Decode([]byte(`{"topic":"t"}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Job(f, Defaults{}); err == nil || !strings.Contains(err.Error(), "body is missing") {
		t.Errorf("a job without a body: %v, want body is missing", err)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Decode's cost of a request naming many top-level fields grows with their
// number, not its square (go test -bench DecodeManyNames ./internal/jobjson).
func BenchmarkDecodeManyNames(b *testing.B) {
	for _, n := range []int{10, 1000, 40000} {
		data := []byte(names(n, `"end":1`))
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				if _, err := Decode(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
