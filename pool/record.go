package pool

import (
	"fmt"
	"math"
	"strings"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"

	"github.com/gmq/gmq/lua"
)

// record is a job's record as the scripts store it (lua/contract.go's
// fields, a cmsgpack array) and a job reply carries it: each field by its
// number, a number or a string as the field holds. A field the record
// lacks (written before the field was added) reads as its zero; one past
// the fields this version knows (written by a newer broker) is skipped.
type record struct {
	num  [lua.FieldCount]int64
	text [lua.FieldCount]string
	has  [lua.FieldCount]bool
}

// decodeRecord reads a packed record. cmsgpack packs a Lua array as a
// msgpack array, or as a map of its indexes when it has a hole (a field
// set past an unset one): both are read.
func decodeRecord(packed string) (record, error) {
	var r record
	dec := msgpack.GetDecoder()
	defer msgpack.PutDecoder(dec)
	dec.Reset(strings.NewReader(packed)) // the reply's string as it is: no copy
	c, err := dec.PeekCode()
	if err != nil {
		return r, fmt.Errorf("job record: %w", err)
	}
	if msgpcode.IsFixedMap(c) || c == msgpcode.Map16 || c == msgpcode.Map32 {
		n, err := dec.DecodeMapLen()
		if err != nil {
			return r, fmt.Errorf("job record: %w", err)
		}
		for range n {
			f, err := dec.DecodeInt64()
			if err != nil {
				return r, fmt.Errorf("job record: a key: %w", err)
			}
			if err := r.field(dec, f); err != nil {
				return r, err
			}
		}
		return r, nil
	}
	n, err := dec.DecodeArrayLen()
	if err != nil {
		return r, fmt.Errorf("job record: %w", err)
	}
	for i := range n {
		if err := r.field(dec, int64(i)+1); err != nil {
			return r, err
		}
	}
	return r, nil
}

// field reads field f's value (Lua's 1-based number) from dec.
func (r *record) field(dec *msgpack.Decoder, f int64) error {
	if f <= 0 || f >= int64(lua.FieldCount) {
		return dec.Skip() // a field of a newer broker
	}
	c, err := dec.PeekCode()
	if err != nil {
		return fmt.Errorf("job record: field %d: %w", f, err)
	}
	if c == msgpcode.Nil {
		return dec.Skip()
	}
	r.has[f] = true
	if lua.Field(f).Text() {
		r.text[f], err = dec.DecodeString()
	} else if c == msgpcode.Float || c == msgpcode.Double {
		var v float64
		v, err = dec.DecodeFloat64() // cmsgpack packs a number that is not whole as a double
		if err == nil && (math.IsNaN(v) || math.Abs(v) > 1<<62) {
			err = fmt.Errorf("%v out of range", v)
		}
		r.num[f] = int64(v)
	} else {
		r.num[f], err = dec.DecodeInt64()
	}
	if err != nil {
		return fmt.Errorf("job record: field %d: %w", f, err)
	}
	return nil
}
