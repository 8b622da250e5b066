package lua

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// A script's reply is an array whose values come in an order the script
// and package pool agree on. ReplyShapes writes that order down once, by
// name: pool's decoders (pool/replies_gen.go) are generated from it, so no
// Go code reads a reply by position and a reply that gains a value is a row
// changed here, then a compile error wherever it matters.
//
// A shape is a reply's values after its status, for each status the
// script answers with (a reply led by one of Statuses). A shape keyed ""
// is a reply with no status: its values from the first. Each value is
// "name type", the types being:
//
//	str, int, bool   one value (bool: 1 or "1"); an absent or nil value reads as its zero
//	job              a job reply: ReplyLen values (contract.lua's reply)
//	strs, ints       one value that is itself an array
//	pairs, triples   one value that is an array of [a, b] pairs (or [a, b, c]) laid flat
//	raw              one value that is an array, left for another shape to decode
//
// and, last only, a list that takes the rest of the reply:
//
//	strs..., ints..., pairs..., triples..., jobs...
//	raw...           the rest as it is, for another shape to decode
//	arrays...        the rest, each value an array (a reply a call, for another shape)
//	<shape>...       the rest as rows of another shape's values (one with no
//	                 status and no list of its own)
//
// A value both statuses carry has one name and one type. pool's decoder
// for a shape is decode<Name>Reply, its result <name>Reply, with a field
// for every value (and Status).
type ReplyShape map[string]string

// replyValue is one value of a shape, parsed.
type replyValue struct {
	name, typ string
	rest      bool // a list that takes the rest of the reply
	statuses  []string
}

// shapeValues parses a shape into its values in order of first use, each
// with the statuses that carry it, or an error that names the row.
func shapeValues(name string, shape ReplyShape) ([]*replyValue, error) {
	var out []*replyValue
	byName := map[string]*replyValue{}
	for _, status := range slices.Sorted(maps.Keys(shape)) {
		if status != "" && !slices.Contains(Statuses, status) {
			return nil, fmt.Errorf("reply %q: status %q is not one of lua.Statuses", name, status)
		}
		if status == "" && len(shape) > 1 {
			return nil, fmt.Errorf("reply %q: a reply with no status has one shape", name)
		}
		values := strings.Split(shape[status], ",")
		if strings.TrimSpace(shape[status]) == "" {
			values = nil
		}
		for i, v := range values {
			f := strings.Fields(v)
			if len(f) != 2 {
				return nil, fmt.Errorf("reply %q %s: %q is not \"name type\"", name, status, v)
			}
			typ, rest := strings.CutSuffix(f[1], "...")
			if rest && i != len(values)-1 {
				return nil, fmt.Errorf("reply %q %s: %q: a list of the rest comes last", name, status, v)
			}
			if rest && rowWidth(typ) > 0 {
				// rows of another shape: fine
			} else if !slices.Contains(valueTypes, typ) || (rest && !slices.Contains(restTypes, typ)) || (!rest && (typ == "jobs" || typ == "arrays")) {
				return nil, fmt.Errorf("reply %q %s: %q: no such type", name, status, v)
			}
			if had := byName[f[0]]; had != nil {
				if had.typ != typ || had.rest != rest {
					return nil, fmt.Errorf("reply %q: %s is %s%s and %s", name, f[0], had.typ, dots(had.rest), f[1])
				}
				had.statuses = append(had.statuses, status)
				continue
			}
			byName[f[0]] = &replyValue{name: f[0], typ: typ, rest: rest, statuses: []string{status}}
			out = append(out, byName[f[0]])
		}
	}
	return out, nil
}

var (
	valueTypes = []string{"str", "int", "bool", "job", "strs", "ints", "pairs", "triples", "raw", "jobs", "arrays"}
	restTypes  = []string{"strs", "ints", "pairs", "triples", "jobs", "raw", "arrays"}
)

// rowWidth is how many values a row of shape name takes: 0 when it is no
// shape, or one with a status or a list of the rest.
func rowWidth(name string) int {
	shape, ok := ReplyShapes[name]
	if !ok || len(shape) != 1 || shape[""] == "" {
		return 0
	}
	n := 0
	for _, spec := range strings.Split(shape[""], ",") {
		f := strings.Fields(spec)
		if len(f) != 2 || strings.HasSuffix(f[1], "...") || !slices.Contains(valueTypes, f[1]) {
			return 0
		}
		if f[1] == "job" {
			n += ReplyLen
		} else {
			n++
		}
	}
	return n
}

func dots(rest bool) string {
	if rest {
		return "..."
	}
	return ""
}
