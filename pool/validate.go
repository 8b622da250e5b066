package pool

import (
	"fmt"
	"strings"
)

// MaxNameLen is the longest topic name and client id, beanstalkd's tube limit.
const MaxNameLen = 200

const topicChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-+/;.$_()"

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
	if i := strings.IndexFunc(name, func(r rune) bool { return !strings.ContainsRune(topicChars, r) }); i >= 0 {
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
	case isDigits(id):
		return fmt.Errorf("%w: id %q is all digits; gmq numbers its own jobs, so a client id needs a non-digit", ErrInvalid, id)
	}
	if i := strings.IndexFunc(id, func(r rune) bool { return !strings.ContainsRune(clientIDChars, r) }); i >= 0 {
		return fmt.Errorf("%w: id %q has a character outside A-Za-z0-9-+;.$_()@=: at byte %d", ErrInvalid, id, i)
	}
	return nil
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
