// Package jobjson reads jobs and their arguments from JSON as gmq's front
// ends receive them (the HTTP API, gmq's JSON-RPC): field names matched
// without regard to case ("TTR" and "ttr"), numbers given as numbers or as
// strings holding them ("delay": "1800", as gmq's producers send), ranges
// checked, every mistake an ErrBadRequest naming its field.
package jobjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gmq/gmq/job"
)

// ErrBadRequest marks client mistakes in a request body (400). It is a
// job.ErrInvalid too (errors.Is), so every front end answers it as one
// (job.KindOf).
var ErrBadRequest error = badRequest{}

type badRequest struct{}

func (badRequest) Error() string { return "bad request" }
func (badRequest) Unwrap() error { return job.ErrInvalid }

// MaxSeconds is beanstalkd's limit for delays and TTRs, and every
// duration's in gmq: an unsigned 32-bit count of seconds.
const MaxSeconds = job.MaxSeconds

// PushLimit bounds the JSON of one pushed job whose body is at most maxBody
// bytes: the body may be escaped up to six times its size (\u00XX), plus
// room for the other fields. Both front ends that read JSON bound by it.
func PushLimit(maxBody int) int64 { return int64(maxBody)*6 + 64<<10 }

// Defaults fill what a push leaves out.
type Defaults struct {
	TTR      time.Duration
	Priority uint32
}

// Fields is a JSON object whose keys are matched without regard to case, so
// that gmq's "TTR" and the alias "ttr" are one field.
type Fields map[string]json.RawMessage

// Decode reads one JSON object, as a front end receives it. Its field
// names must differ by more than case (the lookup is case-blind, so
// {"topic":"a","Topic":"b"} would be ambiguous), and every value in it must
// be one every client reads back as sent (Check: no lone surrogate, no
// bytes that are not UTF-8, no number past a double), since what a request
// carries may be kept and handed out.
func Decode(data []byte) (Fields, error) { return decode(data, true) }

// DecodeStored reads one JSON object the broker stored itself (a schedule's
// layer): as Decode, but without Check, so that what was stored before the
// rule still reads.
func DecodeStored(data []byte) (Fields, error) { return decode(data, false) }

// decode is Decode, with Check or without.
func decode(data []byte, check bool) (Fields, error) {
	// json.Unmarshal, not a json.Decoder: a decoder copies the request into
	// a buffer of its own first, which was a third of a push's parse.
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		var typeErr *json.UnmarshalTypeError
		var syntaxErr *json.SyntaxError
		trailing := errors.As(err, &syntaxErr) && strings.HasSuffix(syntaxErr.Error(), "after top-level value")
		switch {
		case errors.As(err, &typeErr) || trailing && first(data) != '{':
			return nil, fmt.Errorf("%w: want a JSON object", ErrBadRequest)
		case trailing:
			return nil, fmt.Errorf("%w: trailing data after the JSON object", ErrBadRequest)
		}
		return nil, fmt.Errorf("%w: malformed JSON: %v", ErrBadRequest, err)
	}
	if raw == nil {
		return nil, fmt.Errorf("%w: want a JSON object", ErrBadRequest)
	}
	if check {
		if err := Check(data); err != nil {
			return nil, err
		}
	}
	if err := distinctKeys(data); err != nil {
		return nil, err
	}
	// Names are matched without regard to case: each kept lower-cased, in
	// place (distinctKeys refused two that differ only in case; a name
	// added while ranging is lower case, so seeing it again changes nothing).
	for k, v := range raw {
		if lower := strings.ToLower(k); lower != k {
			delete(raw, k)
			raw[lower] = v
		}
	}
	return Fields(raw), nil
}

// plainString is the string a JSON string without escapes holds (ok), read
// without json.Unmarshal's reflection: what it would give for such bytes
// (valid UTF-8; json.Unmarshal makes U+FFFD of invalid bytes, so those go
// to it, as does anything it would refuse). FuzzPlainString holds it to
// json.Unmarshal.
func plainString(raw json.RawMessage) (s string, ok bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	inner := raw[1 : len(raw)-1]
	ascii := true
	for _, c := range inner {
		if c < 0x20 || c == '\\' || c == '"' { // not JSON, or an escape: json.Unmarshal's to read
			return "", false
		}
		ascii = ascii && c < utf8.RuneSelf
	}
	if !ascii && !utf8.Valid(inner) {
		return "", false
	}
	return string(inner), true
}

// distinctKeys refuses a top-level object (valid JSON, as Decode checked)
// that names a field twice, without regard to case. It scans the bytes once,
// without allocating for the usual handful of plain keys: it is on every
// push's path.
func distinctKeys(data []byte) error {
	var seenBuf [16][]byte // the names so far, as the request's own bytes
	seen := seenBuf[:0]
	var many map[string]struct{} // every name, lower-cased, once there are more than seenBuf holds
	depth, expectKey := 0, false
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '"':
			j := i + 1
			for j < len(data) && data[j] != '"' {
				if data[j] == '\\' {
					j++
				}
				j++
			}
			if depth == 1 && expectKey {
				key := data[i+1 : min(j, len(data))]
				if bytes.IndexByte(key, '\\') >= 0 { // escaped: compare what it says
					var unescaped string
					if err := json.Unmarshal(data[i:j+1], &unescaped); err != nil {
						return fmt.Errorf("%w: malformed JSON: %v", ErrBadRequest, err)
					}
					key = []byte(unescaped)
				}
				if many != nil {
					lower := strings.ToLower(string(key))
					if _, twice := many[lower]; twice {
						return fmt.Errorf("%w: field %q is given twice (names are matched without regard to case)", ErrBadRequest, key)
					}
					many[lower] = struct{}{}
				} else {
					for _, k := range seen {
						if sameName(k, key) {
							return fmt.Errorf("%w: field %q is given twice (names are matched without regard to case)", ErrBadRequest, key)
						}
					}
					seen = append(seen, key)
					if len(seen) > len(seenBuf) {
						// Past a handful, a set: comparing each name with
						// every earlier one took 5 s of CPU for 40,000
						// names (a 428 KB request; a JSON-RPC push needs
						// no token).
						many = make(map[string]struct{}, 2*len(seen))
						for _, k := range seen {
							many[strings.ToLower(string(k))] = struct{}{}
						}
					}
				}
				expectKey = false
			}
			i = j
		case '{':
			depth++
			expectKey = depth == 1
		case '[':
			depth++
		case '}', ']':
			depth--
		case ',':
			expectKey = depth == 1
		}
	}
	return nil
}

// sameName says whether two field names are one, as decode keeps names:
// by strings.ToLower. bytes.EqualFold says so for ASCII names, but not for
// all others: it does not fold U+0130 (İ) to 'i', which ToLower makes of
// it, so {"topic":…,"TOPİC":…} passed as two fields and kept one.
func sameName(a, b []byte) bool {
	if isASCII(a) && isASCII(b) {
		return bytes.EqualFold(a, b)
	}
	return strings.ToLower(string(a)) == strings.ToLower(string(b))
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// Only refuses the fields that are not among names (lower case, as Fields
// keeps them): a misspelt field ("dealy") would otherwise be ignored and
// its job run with the default. The error names each unknown field, sorted,
// and what is known; what says whose fields they are ("a job").
func (f Fields) Only(what string, names ...string) error {
	var unknown []string
	for k := range f {
		if !slices.Contains(names, k) {
			unknown = append(unknown, strconv.Quote(k))
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	known := slices.Clone(names)
	slices.Sort(known)
	noun := "field"
	if len(unknown) > 1 {
		noun = "fields"
	}
	return fmt.Errorf("%w: unknown %s %s (%s has %s; names are matched without regard to case)",
		ErrBadRequest, noun, strings.Join(unknown, ", "), what, strings.Join(known, ", "))
}

// Has reports whether the field is present.
func (f Fields) Has(name string) bool { _, ok := f[name]; return ok }

// Str reads a string field; ok is false when it is absent.
func (f Fields) Str(name string) (string, bool, error) {
	raw, ok := f[name]
	if !ok || string(raw) == "null" {
		return "", false, nil
	}
	if s, ok := plainString(raw); ok {
		return s, true, nil
	}
	var s string // only here: one json.Unmarshal reads into is on the heap
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false, fmt.Errorf("%w: %s must be a string, got %s", ErrBadRequest, name, Clip(raw))
	}
	return s, true, nil
}

// Body reads a job's "body": a string, kept as it is (asJSON false, even
// when its text is JSON), or a JSON object or array, kept as its compact
// text (json.Compact: the bytes a line protocol's consumer gets, and what
// the size limits count) with asJSON set, so that the JSON front ends give
// it back as JSON. A number, true, false or null is refused: a body is data
// a consumer reads, and those are more likely a mistake than a message.
// ok is false when the field is absent.
func (f Fields) Body() (body string, asJSON, ok bool, err error) {
	raw, ok := f["body"]
	if !ok {
		return "", false, false, nil
	}
	switch first(raw) {
	case '"':
		if s, ok := plainString(raw); ok {
			return s, false, true, nil
		}
		if err := json.Unmarshal(raw, &body); err != nil {
			return "", false, false, fmt.Errorf("%w: body: %v", ErrBadRequest, err)
		}
		return body, false, true, nil
	case '{', '[':
		var b bytes.Buffer
		b.Grow(len(raw))
		if err := json.Compact(&b, raw); err != nil {
			return "", false, false, fmt.Errorf("%w: body: %v", ErrBadRequest, err)
		}
		if d := depth(b.Bytes()); d > MaxBodyDepth {
			return "", false, false, fmt.Errorf("%w: body: objects and arrays nested %d deep, at most %d", ErrBadRequest, d, MaxBodyDepth)
		}
		return b.String(), true, true, nil
	}
	return "", false, false, fmt.Errorf("%w: body must be a string, an object or an array, got %s", ErrBadRequest, Clip(raw))
}

// MaxBodyDepth is how deep a body's objects and arrays may nest. Every
// client must read a popped job back: PHP's json_decode stops at 512 and
// Python's json at about 1,000 (a RecursionError), so a deeper body was a
// poison message that failed every pop of its batch until its TTRs killed
// the jobs popped with it. 64 is past what data needs.
const MaxBodyDepth = 64

// depth is how deep compact JSON's objects and arrays nest (strings read
// as strings: a '[' in one is text).
func depth(compact []byte) int {
	most, d, inString := 0, 0, false
	for i := 0; i < len(compact); i++ {
		switch c := compact[i]; {
		case inString && c == '\\':
			i++ // the escaped byte
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			d++
			most = max(most, d)
		case c == '}' || c == ']':
			d--
		}
	}
	return most
}

// first is the first byte of a JSON value that is not white space (0: none).
func first(raw json.RawMessage) byte {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\n', '\r':
		default:
			return c
		}
	}
	return 0
}

// Number reads a numeric field given as a JSON number or as a string holding
// one, as gmq's producers send "delay": "1800".
func (f Fields) Number(name string) (v float64, ok bool, err error) {
	raw, ok := f[name]
	if !ok || string(raw) == "null" {
		return 0, false, nil
	}
	text := string(raw)
	if first(raw) == '"' { // a string holding one; only then (trying an Unmarshal on a number cost an error's allocations)
		if plain, ok := plainString(raw); ok {
			text = strings.TrimSpace(plain)
		} else if s := ""; json.Unmarshal(raw, &s) == nil {
			text = strings.TrimSpace(s)
		}
	}
	v, perr := strconv.ParseFloat(text, 64)
	if perr != nil || !isDecimal(text) || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false, fmt.Errorf("%w: %s must be a number (or a string holding one), got %s", ErrBadRequest, name, Clip(raw))
	}
	return v, true, nil
}

// isDecimal reports whether text is a number as JSON writes one (optional
// minus, digits, fraction, exponent): strconv also takes hex floats
// ("0x1p4"), underscores, "Inf" and "NaN", which no producer means.
func isDecimal(text string) bool {
	i, n := 0, len(text)
	digits := func() bool {
		start := i
		for i < n && text[i] >= '0' && text[i] <= '9' {
			i++
		}
		return i > start
	}
	if i < n && text[i] == '-' {
		i++
	}
	if !digits() {
		return false
	}
	if i < n && text[i] == '.' {
		i++
		if !digits() {
			return false
		}
	}
	if i < n && (text[i] == 'e' || text[i] == 'E') {
		i++
		if i < n && (text[i] == '+' || text[i] == '-') {
			i++
		}
		if !digits() {
			return false
		}
	}
	return i == n
}

// Seconds reads a duration in seconds, 0..2^32-1, fractions allowed.
func (f Fields) Seconds(name string) (time.Duration, bool, error) {
	v, ok, err := f.Number(name)
	if err != nil || !ok {
		return 0, ok, err
	}
	if v < 0 || v > MaxSeconds {
		return 0, false, fmt.Errorf("%w: %s must be from 0 to %d seconds, got %v", ErrBadRequest, name, uint64(MaxSeconds), v)
	}
	return time.Duration(math.Ceil(v * float64(time.Second))), true, nil
}

// Whole reads a whole number in lo..hi.
func (f Fields) Whole(name string, lo, hi int64) (int64, bool, error) {
	v, ok, err := f.Number(name)
	if err != nil || !ok {
		return 0, ok, err
	}
	if v != math.Trunc(v) || v < float64(lo) || v > float64(hi) {
		return 0, false, fmt.Errorf("%w: %s must be a whole number from %d to %d, got %v", ErrBadRequest, name, lo, hi, v)
	}
	return int64(v), true, nil
}

// Priority reads "priority" (alias "pri", not both); ok is false when absent.
func (f Fields) Priority() (int64, bool, error) {
	if f.Has("priority") && f.Has("pri") {
		return 0, false, fmt.Errorf("%w: give priority or pri, not both", ErrBadRequest)
	}
	name := "priority"
	if !f.Has(name) {
		name = "pri"
	}
	return f.Whole(name, 0, math.MaxUint32)
}
