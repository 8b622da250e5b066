package jobjson

import (
	"errors"
	"testing"
)

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
