package job

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateTopic(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"emails", true},
		{"a-b+c/d;e.f$g_h(i)", true},
		{strings.Repeat("t", MaxNameLen), true},
		{"", false},
		{"-leading", false},
		{"with space", false},
		{"é", false},
		{strings.Repeat("t", MaxNameLen+1), false},
	} {
		err := ValidateTopic(tc.name)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrInvalid)) {
			t.Errorf("ValidateTopic(%q) = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

func TestValidateClientID(t *testing.T) {
	for _, tc := range []struct {
		id string
		ok bool
	}{
		{"order-17", true},
		{"user@example.com:1=2", true},
		{"", false},
		{"12345", false}, // the form of gmq's own numbers
		{"a/b", false},
		{strings.Repeat("x", MaxNameLen+1), false},
	} {
		err := ValidateClientID(tc.id)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrInvalid)) {
			t.Errorf("ValidateClientID(%q) = %v, want ok=%v", tc.id, err, tc.ok)
		}
		if tc.ok && IsNumber(tc.id) {
			t.Errorf("IsNumber(%q) is true for a valid client id", tc.id)
		}
	}
}

func TestPublicIDAndState(t *testing.T) {
	if got := PublicID("", 42); got != "42" {
		t.Errorf("PublicID of a number = %q", got)
	}
	if got := PublicID("order-1", 42); got != "order-1" {
		t.Errorf("PublicID of a client id = %q", got)
	}
	if Buried.String() != "buried" || State(9).String() != "state(9)" {
		t.Errorf("State names: %s, %s", Buried, State(9))
	}
}
