package pool

import (
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/gmq/gmq/lua"
)

// decodeRecord reads what cmsgpack packs: an array of the fields, or a
// map of their numbers when the Lua table had a hole; a field past the
// known ones is skipped, a nil one is unset, a number packed as a double
// reads whole.
func TestDecodeRecord(t *testing.T) {
	pack := func(v any) []byte {
		b, err := msgpack.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tc := range []struct {
		name      string
		packed    []byte
		pri       int64
		topic     string
		body      string
		hasBody   bool
		wantError bool
	}{
		{"an array", pack([]any{2, "t", 7}), 7, "t", "", false, false},
		{"a map with a hole", pack(map[int]any{1: 2, 2: "t", 3: 9, int(lua.FieldBody): "b"}), 9, "t", "b", true, false},
		{"a map with the body left out", pack(map[int]any{1: 2, 2: "t", 3: 9, int(lua.FieldResult): "r"}), 9, "t", "", false, false},
		{"a field of a newer broker", pack(append(make([]any, lua.FieldCount-1), "future")), 0, "", "", false, false},
		{"a double", pack([]any{2, "t", 1024.0}), 1024, "t", "", false, false},
		{"nil", pack([]any{2, nil, 3}), 3, "", "", false, false},
		{"not a record", []byte{0xc1}, 0, "", "", false, true},
		{"a string where a number goes", pack([]any{"x"}), 0, "", "", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := decodeRecord(string(tc.packed))
			if (err != nil) != tc.wantError {
				t.Fatalf("error %v, want one: %v", err, tc.wantError)
			}
			if err != nil {
				return
			}
			if r.num[lua.FieldPriority] != tc.pri || r.text[lua.FieldTopic] != tc.topic ||
				r.text[lua.FieldBody] != tc.body || r.has[lua.FieldBody] != tc.hasBody {
				t.Fatalf("read %+v", r)
			}
		})
	}
}

// A record of any bytes is read or refused, never a panic.
func FuzzDecodeRecord(f *testing.F) {
	for _, seed := range [][]byte{{0x93, 0x02, 0xa1, 't', 0x07}, {0x81, 0x01, 0x02}, {0xdc, 0xff, 0xff}, {}} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = decodeRecord(string(b))
	})
}
