package job

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxNameLen is the longest topic name and client id, beanstalkd's tube limit.
const MaxNameLen = 200

const topicChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-+/;.$_()"

// byteSet is a set of bytes, for checking names once per byte on every push.
type byteSet [256]bool

func newByteSet(chars string) (set byteSet) {
	for i := 0; i < len(chars); i++ {
		set[chars[i]] = true
	}
	return set
}

// firstOutside is the index of the first byte of s not in the set, or -1.
func (set *byteSet) firstOutside(s string) int {
	for i := 0; i < len(s); i++ {
		if !set[s[i]] {
			return i
		}
	}
	return -1
}

var topicBytes, clientIDBytes = newByteSet(topicChars), newByteSet(clientIDChars)

// IsTopicByte reports whether b may appear in a topic name.
func IsTopicByte(b byte) bool { return topicBytes[b] }

// ValidateTopic checks a topic name against beanstalkd's tube rules: 1-200
// bytes of A-Za-z0-9-+/;.$_() not starting with '-'.
func ValidateTopic(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: topic name is empty", ErrInvalid)
	case len(name) > MaxNameLen:
		return fmt.Errorf("%w: topic name is %d bytes, the limit is %d", ErrInvalid, len(name), MaxNameLen)
	case name[0] == '-':
		return fmt.Errorf("%w: topic name %q starts with '-'", ErrInvalid, name)
	}
	if i := topicBytes.firstOutside(name); i >= 0 {
		return fmt.Errorf("%w: topic name %q has a character outside A-Za-z0-9-+/;.$_() at byte %d", ErrInvalid, name, i)
	}
	return nil
}

const clientIDChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-+;.$_()@=:"

// ValidateClientID checks a client-supplied job id: 1-200 bytes of
// A-Za-z0-9-+;.$_()@=: with at least one character that is not a digit, so
// that it can never be mistaken for a number gmq assigned.
func ValidateClientID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: id is empty", ErrInvalid)
	case len(id) > MaxNameLen:
		return fmt.Errorf("%w: id is %d bytes, the limit is %d", ErrInvalid, len(id), MaxNameLen)
	case IsNumber(id):
		return fmt.Errorf("%w: id %q is all digits; gmq numbers its own jobs, so a client id needs a non-digit", ErrInvalid, id)
	}
	if i := clientIDBytes.firstOutside(id); i >= 0 {
		return fmt.Errorf("%w: id %q has a character outside A-Za-z0-9-+;.$_()@=: at byte %d", ErrInvalid, id, i)
	}
	return nil
}

// MaxGroup is the longest group name, bytes (lib_groups.lua's MAX_GROUP).
const MaxGroup = 200

// ValidateGroup checks a job's group: 1 to MaxGroup bytes of UTF-8 without
// control characters (a group's name is printed in stats and on the
// dashboard).
func ValidateGroup(g string) error {
	if g == "" || len(g) > MaxGroup || !utf8.ValidString(g) {
		return fmt.Errorf("%w: group: want 1 to %d bytes of UTF-8", ErrInvalid, MaxGroup)
	}
	for i := 0; i < len(g); i++ {
		if g[i] < 0x20 || g[i] == 0x7f {
			return fmt.Errorf("%w: group %q has a control character at byte %d", ErrInvalid, g, i)
		}
	}
	return nil
}

// IsNumber reports whether a public id has the form of a number gmq assigned
// (all digits), which no client id has.
func IsNumber(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// ValidateTraceParent checks a W3C trace context traceparent header value:
// version 00's form, 2-32-16-2 lower-case hex digits, trace and span ids
// not all zero ("" is none).
func ValidateTraceParent(v string) error {
	if v == "" {
		return nil
	}
	bad := fmt.Errorf("%w: traceparent %q is not a W3C trace context (00-<32 hex>-<16 hex>-<2 hex>)", ErrInvalid, clip(v))
	parts := strings.Split(v, "-")
	if len(parts) != 4 || len(parts[0]) != 2 || len(parts[1]) != 32 || len(parts[2]) != 16 || len(parts[3]) != 2 || parts[0] == "ff" {
		return bad
	}
	for _, p := range parts {
		if strings.Trim(p, "0123456789abcdef") != "" {
			return bad
		}
	}
	if strings.Trim(parts[1], "0") == "" || strings.Trim(parts[2], "0") == "" {
		return bad
	}
	return nil
}

// clip shortens a value for an error message.
func clip(v string) string {
	if len(v) > 64 {
		return v[:64] + "…"
	}
	return v
}
