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
// REPLY.<shape>(values) one with none, the values in the row's order:
//
//   - a job value is the job's reply (contract.lua reply's table), of which
//     the reply is made: the values before it are put in front of its own,
//     those after it after, so the reply costs no table of its own;
//   - a list that takes the rest (x...) is the last argument, a table of
//     its values laid flat, or nil (none: the script may append them to the
//     reply). Without a job the reply is made of that table, the values
//     before it put in front; with one, its values are appended.
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

// constructor is row's Lua function, on one line.
func (row ReplyRow) constructor() string {
	var params, values []string // values: the reply's, in order
	if row.Status != "" {
		values = append(values, "'"+row.Status+"'")
	}
	job, rest := "", ""
	for _, v := range row.Values {
		p := luaParam(v.Name)
		params = append(params, p)
		switch {
		case v.Rest:
			rest = p
		case v.Type == "job":
			job = p
			for i := 1; i <= ReplyLen; i++ {
				values = append(values, fmt.Sprintf("%s[%d]", p, i))
			}
		default:
			values = append(values, p)
		}
	}
	head := "function(" + strings.Join(params, ", ") + ") "
	switch {
	case job != "":
		// The job's table becomes the reply: every value is read before
		// any is assigned (Lua evaluates a multiple assignment's values
		// first), so its own move up in one statement.
		var at []string
		for i := range values {
			at = append(at, fmt.Sprintf("%s[%d]", job, i+1))
		}
		body := strings.Join(at, ", ") + " = " + strings.Join(values, ", ")
		if rest != "" {
			body += fmt.Sprintf(" if %s then for i = 1, #%s do %s[%d + i] = %s[i] end end", rest, rest, job, len(values), rest)
		}
		return head + body + " return " + job + " end"
	case rest != "" && len(values) == 0:
		return head + "return " + rest + " or {} end"
	case rest != "":
		var at []string
		for i := range values {
			at = append(at, fmt.Sprintf("%s[%d]", rest, i+1))
		}
		return head + fmt.Sprintf("if not %s then return {%s} end for i = #%s, 1, -1 do %s[i + %d] = %s[i] end %s = %s return %s end",
			rest, strings.Join(values, ", "), rest, rest, len(values), rest, strings.Join(at, ", "), strings.Join(values, ", "), rest)
	default:
		return head + "return {" + strings.Join(values, ", ") + "} end"
	}
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
