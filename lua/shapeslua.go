package lua

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// The scripts build their replies from ReplyShapes too: contract.lua's
// REPLY holds a constructor a shape and status, generated from the same
// row as pool's decoder of it, so a script never lays a reply out by hand
// (TestRepliesBuiltByShape) and what a constructor builds is what the
// decoder reads (pool's TestReplyConstructorsAgree).
//
// REPLY.<shape>.<STATUS>(values) builds a reply led by a status, and
// REPLY.<shape>(values) one with none, the values in the row's order, in
// one table constructor, as a literal reply was:
//
//   - a job value is the job reply's values (contract.lua reply returns
//     them; {reply(...)} is one in a table, as a list of jobs holds them);
//   - a list that takes the rest (x...) is the last arguments, or none:
//     the script then appends its values to the reply (a long list: Lua
//     passes at most a few thousand values).
//
// A shape's statuses with no values (a bare refusal: "NOT_FOUND": "")
// have constructors too, so that every status a script answers is a row.

// unbuilt are the shapes contract.lua has no constructor for: Redis's own
// replies, which no script builds, and topic_stats.lua's, which sets its
// many values by the names of contract.lua's S, generated from the same
// table as its row (topicStats; TestContractTopicStats).
var unbuilt = map[string]bool{"cluster_slots": true, "slot_range": true, "slot_master": true, "topic_stats": true}

// ReplyRow is one status of a shape (Status "" for a shape without), as
// contract.lua's REPLY builds it and pool decodes it.
type ReplyRow struct {
	Shape, Status string
	Call          string // the constructor: REPLY.pop.OK, REPLY.kick
	Values        []ReplyValue
}

// ReplyValue is one value of a row.
type ReplyValue struct {
	Name  string // its name in the row, and the constructor's parameter
	Field string // its field in pool's decoded struct
	Type  string // a type of shapes.go, without "..."
	Rest  bool   // a list that takes the rest of the reply
}

// ReplyRows lists every row the scripts build, by shape and status, in
// order.
func ReplyRows() ([]ReplyRow, error) {
	var out []ReplyRow
	for _, name := range slices.Sorted(maps.Keys(ReplyShapes)) {
		if unbuilt[name] {
			continue
		}
		shape := ReplyShapes[name]
		if _, err := shapeValues(name, shape); err != nil {
			return nil, err
		}
		for _, status := range slices.Sorted(maps.Keys(shape)) {
			row := ReplyRow{Shape: name, Status: status, Call: "REPLY." + name}
			if status != "" {
				row.Call += "." + status
			}
			if strings.TrimSpace(shape[status]) != "" {
				for _, spec := range strings.Split(shape[status], ",") {
					f := strings.Fields(spec)
					typ, rest := strings.CutSuffix(f[1], "...")
					row.Values = append(row.Values, ReplyValue{Name: f[0], Field: goName(f[0], true), Type: typ, Rest: rest})
				}
			}
			out = append(out, row)
		}
	}
	return out, nil
}

// luaKeywords may not name a parameter: a value so named is given one
// with "_" after it.
var luaKeywords = map[string]bool{"and": true, "break": true, "do": true, "else": true, "elseif": true,
	"end": true, "false": true, "for": true, "function": true, "if": true, "in": true, "local": true,
	"nil": true, "not": true, "or": true, "repeat": true, "return": true, "then": true, "true": true,
	"until": true, "while": true}

func luaParam(name string) string {
	if luaKeywords[name] {
		return name + "_"
	}
	return name
}

// constructor is row's Lua function, on one line: one table constructor,
// as a literal reply was.
func (row ReplyRow) constructor() string {
	var params, values []string // values: the reply's, in order
	if row.Status != "" {
		values = append(values, "'"+row.Status+"'")
	}
	for _, v := range row.Values {
		p := luaParam(v.Name)
		switch {
		case v.Rest:
			p = "..."
		case v.Type == "job":
			p = strings.Join(jobParams(v.Name), ", ")
		}
		params = append(params, p)
		values = append(values, p)
	}
	return "function(" + strings.Join(params, ", ") + ") return {" + strings.Join(values, ", ") + "} end"
}

// jobParams are the parameters of a job value named name: the job
// reply's values (contract.lua reply's).
func jobParams(name string) []string {
	return []string{name + "_member", name + "_body", name + "_now", name + "_record"}
}

// replyTable is REPLY as Lua statements: every constructor, or only those
// used (a standalone script's: shape or shape.STATUS names).
func replyTable(used []string) (string, error) {
	rows, err := ReplyRows()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("local REPLY = {}\n")
	shapeOpen := ""
	for _, row := range rows {
		key := strings.TrimPrefix(row.Call, "REPLY.")
		if used != nil && !slices.Contains(used, key) {
			continue
		}
		if shapeOpen != "" && shapeOpen != row.Shape {
			b.WriteString("}\n")
			shapeOpen = ""
		}
		if row.Status == "" {
			fmt.Fprintf(&b, "REPLY.%s = %s\n", row.Shape, row.constructor())
			continue
		}
		if shapeOpen == "" {
			fmt.Fprintf(&b, "REPLY.%s = {\n", row.Shape)
			shapeOpen = row.Shape
		}
		fmt.Fprintf(&b, "  %s = %s,\n", row.Status, row.constructor())
	}
	if shapeOpen != "" {
		b.WriteString("}\n")
	}
	return b.String(), nil
}

var replyUse = regexp.MustCompile(`\bREPLY\.([a-z_]+)(\.[A-Z_]+)?`)

// repliesOf are the constructors script body calls (shape or
// shape.STATUS), in order.
func repliesOf(body string) []string {
	var out []string
	for _, m := range replyUse.FindAllStringSubmatch(body, -1) {
		if key := m[1] + m[2]; !slices.Contains(out, key) {
			out = append(out, key)
		}
	}
	return out
}
