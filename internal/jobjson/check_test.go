package jobjson

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// Every JSON value the broker keeps must read back as it was sent in every
// client (issue 49): Decode refuses, naming the value's path, what some
// decoder would change or fail on, wherever in the request it is.
func TestDecodeRefusesWhatClientsCannotReadBack(t *testing.T) {
	tests := []struct {
		name, json string
		says       string // "" : accepted
	}{
		{"a lone high surrogate in a body", `{"topic":"t","body":{"s":"\ud800"}}`, `body.s: lone surrogate \ud800`},
		{"a lone low surrogate", `{"body":{"s":"x\uDC00y"}}`, `body.s: lone surrogate \uDC00`},
		{"a high surrogate then no low one", `{"body":{"s":"\ud800\u0041"}}`, `body.s: lone surrogate \ud800`},
		{"two high surrogates", `{"body":{"s":"\ud83d\ud83d"}}`, `body.s: lone surrogate \ud83d`},
		{"a low then a high one", `{"body":{"s":"\udc00\ud800"}}`, `body.s: lone surrogate \udc00`},
		{"a high surrogate at the string's end", `{"body":["a","\ud800"]}`, `body[1]: lone surrogate \ud800`},
		{"a string body", `{"body":"\ud800"}`, `body: lone surrogate \ud800`},
		{"in a name", `{"body":{"\ud800":1}}`, `body, a member's name: lone surrogate`},
		{"in a top-level name", `{"\udfff":1}`, `the JSON, a member's name: lone surrogate`},
		{"a result", `{"result":{"items":[1,2,3,1e400]}}`, `result.items[3]: number 1e400 out of range`},
		{"a negative overflow", `{"body":[-1e400]}`, `body[0]: number -1e400 out of range`},
		{"400 digits", `{"body":[` + strings.Repeat("9", 400) + `]}`, `body[0]: number 9999999999999999999999999999999999999999... out of range`},
		{"just past the largest double", `{"body":[1.7976931348623159e308]}`, `out of range`},
		{"a batch's job", `{"jobs":[{"topic":"t","body":"x"},{"topic":"t","body":{"a":{"b":["\ud800"]}}}]}`, `jobs[1].body.a.b[0]: lone surrogate`},
		{"a name that is not plain", `{"body":{"a b":{"c.d":"\ud800"}}}`, `body["a b"]["c.d"]: lone surrogate`},
		{"an error's text", `{"error":"\udead"}`, `error: lone surrogate \udead`},
		{"bytes that are not UTF-8", "{\"body\":{\"s\":\"\xff\"}}", `body.s: not valid UTF-8`},
		{"a surrogate as UTF-8 bytes", "{\"body\":\"\xed\xa0\x80\"}", `body: not valid UTF-8`},
		{"a name's bytes not UTF-8", "{\"body\":{\"\xc3\":1}}", `body, a member's name: not valid UTF-8`},

		{"a surrogate pair", `{"body":{"s":"\ud83d\ude00 \uD83D\uDE00"}}`, ""},
		{"the largest double", `{"body":[1.7976931348623157e308,-1.7976931348623157e308]}`, ""},
		{"whole numbers past 2^53 are kept", `{"body":[9007199254740993,18446744073709551616]}`, ""},
		{"numbers too small for a double read as 0, kept", `{"body":[1e-400,5e-324]}`, ""},
		{"escaped text that looks like a surrogate", `{"body":"\\ud800 \\\ud83d\ude00"}`, ""},
		{"other escapes", `{"body":"\u00e9\n\t\"\\\/\ufffd"}`, ""},
		{"U+FFFD sent as such", "{\"body\":\"\xef\xbf\xbd\"}", ""},
		{"numbers in strings are text", `{"body":{"n":"1e400"}}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode([]byte(tt.json))
			switch {
			case tt.says == "" && err != nil:
				t.Fatalf("Decode(%s): %v, want it accepted", tt.json, err)
			case tt.says != "" && (err == nil || !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), tt.says)):
				t.Fatalf("Decode(%s): %v, want a bad request saying %q", tt.json, err, tt.says)
			}
		})
	}
}

// A batch's meta follows the same rule as a body or a result, named meta.
func TestBatchMetaRule(t *testing.T) {
	for meta, says := range map[string]string{
		`{"n":1e400}`:    `meta.n: number 1e400 out of range`,
		`{"s":"\ud800"}`: `meta.s: lone surrogate`,
		`{"n":1e308}`:    "",
		`"\ud83d\ude00"`: "",
	} {
		f, err := Decode([]byte(`{"meta":` + meta + `}`))
		if err == nil {
			_, err = Batch(f, Defaults{})
		}
		if (says == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), says)) {
			t.Errorf("meta %s: %v, want %q", meta, err, says)
		}
	}
}

// FuzzCheck holds Check to Go's own decoder, which reads a lone surrogate or
// bytes that are not UTF-8 as U+FFFD and fails on a number past a double:
// for well-formed JSON holding no U+FFFD of its own, Check accepts exactly
// what Go decodes without a failure and without a U+FFFD. It never panics
// on any input.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{`{"s":"\ud800"}`, `{"s":"\ud83d\ude00"}`, `[1e400]`, `[-1e400,1e-400]`, `{"\udc00":1}`,
		`{"a":[{"b":"\\ud800"}]}`, "[\"\xff\"]", `"\ud800\u0041"`, `[9007199254740993]`, `{"a":"\u00e9"}`, `[1, "\ud800`, `\`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := Check(data) // must not panic, whatever data is
		if !json.Valid(data) {
			return
		}
		if err != nil && !errors.Is(err, ErrBadRequest) {
			t.Fatalf("Check(%q): %v is not a bad request", data, err)
		}
		text := strings.ToLower(string(data))
		if strings.Contains(text, `\ufffd`) || strings.Contains(text, "\ufffd") || !utf8.Valid(data) && err == nil {
			return // U+FFFD of its own: Go's reading cannot tell
		}
		var v any
		goErr := json.Unmarshal(data, &v)
		lossless := goErr == nil
		if lossless {
			again, _ := json.Marshal(v)
			lossless = !strings.Contains(string(again), "\ufffd")
		}
		if lossless != (err == nil) {
			t.Fatalf("Check(%q) = %v, but Go's decoder reads it back whole: %v (%v)", data, err, lossless, goErr)
		}
	})
}
