package jobjson

// The rule for every JSON value the broker keeps (a body, a result, a
// batch's meta, a schedule's job, an error's text): it must be JSON that
// every client's standard decoder reads back as it was sent. Each front end
// that reads JSON (HTTP, JSON-RPC) reads a request through Decode, which
// applies it once to the whole request, so the rule lives here alone.

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Check refuses, as an ErrBadRequest naming the value's path ("body.s",
// "jobs[2].body", "result.items[3]"), the first value in a JSON text that
// not every client reads back as it was sent:
//   - a string (or a name) holding a lone surrogate escape (\ud800 not
//     followed by \udc00-\udfff, or \udc00 not after \ud800-\udbff): Go
//     replaces it with U+FFFD, so the stored body would not be the one
//     sent; PHP's json_decode fails on it, so a PHP worker could never pop
//     the job; Python reads a str it cannot write as UTF-8;
//   - a string holding bytes that are not UTF-8 (every decoder replaces or
//     refuses them);
//   - a number a double cannot hold (1e400, -1e400, 400 digits): Go's
//     decoder fails on it, Python and PHP read infinity, JavaScript
//     Infinity, none of them the number sent.
//
// Whole numbers past 2^53 are kept as they are: every decoder reads them
// (JavaScript and Go's any to the nearest double, PHP past 2^63 as a
// float), none fails, and Python, PHP and Go into an int64 read them
// exactly. Numbers too small for a double (1e-400) read as 0 everywhere
// and are kept too: no decoder fails on them, and a double cannot tell
// them from 0 whichever way they are sent.
//
// data must be well-formed JSON (Decode's parse comes first); on anything
// else Check still ends without panicking, its answer then meaningless.
func Check(data []byte) error {
	var c checker
	for i := 0; i < len(data); i++ {
		var err error
		switch b := data[i]; b {
		case '{', '[':
			c.open(b == '[')
		case '}', ']':
			c.close()
		case ',':
			c.next()
		case '"':
			i, err = c.str(data, i)
		case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			i, err = c.number(data, i)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// checker is Check's place in the text: the open objects and arrays, each
// with its current name (raw, as sent) or index.
type checker struct {
	stack   []frame
	keyNext bool // the next string in the innermost object is a name
}

type frame struct {
	array bool
	index int
	name  []byte // the member's name as sent, between its quotes
}

func (c *checker) open(array bool) {
	c.stack = append(c.stack, frame{array: array})
	c.keyNext = !array
}

func (c *checker) close() {
	if len(c.stack) > 0 {
		c.stack = c.stack[:len(c.stack)-1]
	}
	c.keyNext = false
}

func (c *checker) next() {
	if n := len(c.stack); n > 0 {
		if c.stack[n-1].array {
			c.stack[n-1].index++
		} else {
			c.keyNext = true
		}
	}
}

// str checks the string whose opening quote is at data[i] and returns the
// index of its closing quote.
func (c *checker) str(data []byte, i int) (int, error) {
	start := i + 1
	j := start
	for j < len(data) && data[j] != '"' {
		switch b := data[j]; {
		case b == '\\':
			end, err := c.escape(data, j)
			if err != nil {
				return j, err
			}
			j = end
		case b < utf8.RuneSelf:
			j++
		default:
			r, size := utf8.DecodeRune(data[j:])
			if r == utf8.RuneError && size <= 1 {
				return j, c.fail("not valid UTF-8 (every client's decoder would replace or refuse its bytes)")
			}
			j += size
		}
	}
	if c.keyNext && len(c.stack) > 0 {
		c.stack[len(c.stack)-1].name = data[start:min(j, len(data))]
		c.keyNext = false
	}
	return j, nil
}

// escape checks the escape at data[j] (a backslash) and returns the index
// just past it: a \u escape of a surrogate must be one half of a pair,
// high then low.
func (c *checker) escape(data []byte, j int) (int, error) {
	if j+1 >= len(data) || data[j+1] != 'u' {
		return j + 2, nil
	}
	r, ok := hex4(data, j+2)
	if !ok || !utf16.IsSurrogate(r) {
		return j + 6, nil
	}
	if r < 0xdc00 { // a high half: a low one must follow
		if j+7 < len(data) && data[j+6] == '\\' && data[j+7] == 'u' {
			if low, ok := hex4(data, j+8); ok && low >= 0xdc00 && low <= 0xdfff {
				return j + 12, nil
			}
		}
	}
	return j, c.fail("lone surrogate " + string(data[j:j+6]) + " (a surrogate escape must be half of a pair; clients would read U+FFFD or fail)")
}

// hex4 reads four hex digits at data[at:].
func hex4(data []byte, at int) (rune, bool) {
	if at+4 > len(data) {
		return 0, false
	}
	var r rune
	for _, b := range data[at : at+4] {
		switch {
		case b >= '0' && b <= '9':
			r = r<<4 | rune(b-'0')
		case b >= 'a' && b <= 'f':
			r = r<<4 | rune(b-'a'+10)
		case b >= 'A' && b <= 'F':
			r = r<<4 | rune(b-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// number checks the number starting at data[i] and returns the index of
// its last byte.
func (c *checker) number(data []byte, i int) (int, error) {
	j, exp := i, false
	for j < len(data) && strings.IndexByte("+-.0123456789eE", data[j]) >= 0 {
		exp = exp || data[j] == 'e' || data[j] == 'E'
		j++
	}
	text := string(data[i:j])
	// Without an exponent, fewer than 300 digits always fit (the
	// largest double has 309); only the others are parsed.
	if exp || len(text) >= 300 {
		if _, err := strconv.ParseFloat(text, 64); errors.Is(err, strconv.ErrRange) {
			return j - 1, c.fail("number " + Clip([]byte(text)) + " out of range (a double holds at most about 1.8e308; send a string for more)")
		}
	}
	return j - 1, nil
}

// fail is the error for the value at the checker's place.
func (c *checker) fail(why string) error {
	return fmt.Errorf("%w: %s: %s", ErrBadRequest, c.path(), why)
}

// path names the checker's place: names joined by dots, indexes in
// brackets; a name that is not plain (letters, digits, _ and -) quoted in
// brackets. "the JSON" at the top level; a name being read names its
// object and says so.
func (c *checker) path() string {
	var b strings.Builder
	for n, f := range c.stack {
		switch {
		case f.array:
			fmt.Fprintf(&b, "[%d]", f.index)
		case n == len(c.stack)-1 && c.keyNext:
			// a name of this object is bad: the path ends at the object
		case plainName(f.name):
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.Write(f.name)
		default:
			b.WriteString("[\"")
			b.Write(f.name) // as sent: already JSON's escapes
			b.WriteString("\"]")
		}
	}
	where := b.String()
	if where == "" {
		where = "the JSON"
	}
	if c.keyNext {
		return where + ", a member's name"
	}
	return where
}

func plainName(name []byte) bool {
	if len(name) == 0 {
		return false
	}
	for _, b := range name {
		if !(b == '_' || b == '-' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z') {
			return false
		}
	}
	return true
}
