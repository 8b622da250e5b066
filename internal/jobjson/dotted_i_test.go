package jobjson

import (
	"strings"
	"testing"
)

// Names are matched without regard to case, so two that lower-case to the
// same name are one field given twice. distinctKeys compares with
// EqualFold, but Decode keeps names by strings.ToLower, and the two differ
// on U+0130 (İ): ToLower makes it 'i', EqualFold does not fold it to 'i'.
// {"topic":"a","TOPİC":"b"} was accepted, its job pushed to "b" (before
// fcab0e7, to either at random).
func TestDecodeRefusesNamesOneUnderToLower(t *testing.T) {
	for _, in := range []string{
		`{"topic":"a","TOP` + "\u0130" + `C":"b","body":"x"}`,
		`{"topic":"a","TOP\u0130C":"b","body":"x"}`,
		`{"id":"a","` + "\u0130" + `D":"b","topic":"t","body":"x"}`,
	} {
		if _, err := Decode([]byte(in)); err == nil || !strings.Contains(err.Error(), "given twice") {
			t.Errorf("Decode(%s): %v, want a field given twice", in, err)
		}
	}
}
