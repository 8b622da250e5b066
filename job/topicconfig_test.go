package job

import (
	"errors"
	"testing"
)

// Each setting's rule, at and past its bounds, and its canonical text.
func TestCheckTopicSetting(t *testing.T) {
	for _, c := range []struct {
		key, value, want string
		ok               bool
	}{
		{"rate", "100", "100", true},
		{"rate", "0.5", "0.5", true},
		{"rate", "2.50", "2.5", true},
		{"rate", "0", "0", true},
		{"rate", "1000000", "1000000", true},
		{"rate", "1000000.5", "", false},
		{"rate", "0.000001", "0.000001", true},
		{"rate", "0.0000001", "", false},
		{"rate", "1e-400", "", false}, // reads as 0: no limit, which it does not mean
		{"rate", "0e5", "0", true},
		{"burst", "1000000000", "1000000000", true},
		{"burst", "1000000001", "", false},
		{"rate", "-1", "", false},
		{"rate", "NaN", "", false},
		{"rate", "fast", "", false},
		{"burst", "10", "10", true},
		{"burst", "1.5", "", false},
		{"max_reserved", "3", "3", true},
		{"max_reserved", "-3", "", false},
		{"max_attempts", "007", "7", true},
		{"max_age", "4294967295", "4294967295", true},
		{"max_age", "4294967296", "", false},
		{"backoff_jitter", "1", "true", true},
		{"rate", "", "", true}, // unset: inherited
		{"no_such", "1", "", false},
	} {
		got, err := CheckTopicSetting(c.key, c.value)
		if c.ok && (err != nil || got != c.want) {
			t.Errorf("%s = %q: got %q, %v; want %q", c.key, c.value, got, err, c.want)
		}
		if !c.ok && !errors.Is(err, ErrInvalid) {
			t.Errorf("%s = %q: got %q, %v; want ErrInvalid", c.key, c.value, got, err)
		}
	}
}
