package pool

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/redis/rueidis"

	"github.com/gmq/gmq/lua"
)

// The table of decoders by name is lua.ReplyShapes as they stand.
func TestReplyDecoderTableIsGenerated(t *testing.T) {
	want, err := lua.ReplyDecoderTable()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("replydecoders_gen_test.go")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatal("pool/replydecoders_gen_test.go is stale: run go generate ./lua")
	}
}

// TestReplyConstructorsAgree: what each of contract.lua's constructors
// builds, run by a real Redis, is what its shape's generated decoder reads:
// its status, each value by name, and no value more. Each row is built
// twice: given every value (a list that takes the rest as the last
// arguments, a job's body a string), and given those before the list,
// which the script then appends itself (a job's body false: the record
// holds it).
func TestReplyConstructorsAgree(t *testing.T) {
	p, ctx := newPool(t)
	rows, err := lua.ReplyRows()
	if err != nil {
		t.Fatal(err)
	}
	contract := lua.ContractLua()
	for _, row := range rows {
		for _, appended := range []bool{false, true} {
			name := fmt.Sprintf("%s %s appended=%v", row.Shape, row.Status, appended)
			var args, rest []string
			want := map[string]string{}
			n := 0 // the reply's values
			if row.Status != "" {
				n++
			}
			for i, v := range row.Values {
				lit, w, width := sampleValue(t, v, i, appended)
				want[v.Field] = w
				n += width
				switch {
				case v.Rest && appended:
					rest = append(rest, lit)
				case v.Rest:
					args = append(args, "unpack("+lit+")")
				case v.Type == "job":
					args = append(args, strings.TrimSuffix(strings.TrimPrefix(lit, "{"), "}"))
				default:
					args = append(args, lit)
				}
			}
			code := fmt.Sprintf("%s\nlocal r = %s(%s)\n", contract, row.Call, strings.Join(args, ", "))
			for _, list := range rest {
				code += fmt.Sprintf("for _, v in ipairs(%s) do r[#r + 1] = v end\n", list)
			}
			code += "return r"
			reply, err := p.client.Do(ctx, p.client.B().Eval().Script(code).Numkeys(0).Build()).ToArray()
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			decode, ok := replyDecoders[row.Shape]
			if !ok {
				t.Fatalf("%s: no decoder", name)
			}
			got := reflect.ValueOf(decode(reply))
			if row.Status != "" {
				if s := got.FieldByName("Status").String(); s != row.Status {
					t.Errorf("%s: status %q", name, s)
				}
			}
			for field, w := range want {
				f := got.FieldByName(field)
				if !f.IsValid() {
					t.Errorf("%s: the decoder has no field %s", name, field)
					continue
				}
				if g := canonical(f.Interface()); g != w {
					t.Errorf("%s: %s is %s, want %s", name, field, g, w)
				}
			}
			if values := got.FieldByName("Values").Int(); int(values) != n {
				t.Errorf("%s: %d values, want %d", name, values, n)
			}
		}
	}
}

// sampleValue is a value of v's type, as a Lua expression, as the decoded
// field reads (canonical), and how many of the reply's values it takes.
// i makes each value of a row its own.
func sampleValue(t *testing.T, v lua.ReplyValue, i int, bodyless bool) (lit, want string, width int) {
	t.Helper()
	s := fmt.Sprintf("%s_%d", v.Name, i)
	if v.Rest {
		switch v.Type {
		case "strs":
			return fmt.Sprintf("{'%s', 'x'}", s), fmt.Sprintf("[%s x]", s), 2
		case "ints":
			return fmt.Sprintf("{%d, 7}", 100+i), fmt.Sprintf("[%d 7]", 100+i), 2
		case "pairs":
			return fmt.Sprintf("{'%s', 'a', 'b', 'c'}", s), fmt.Sprintf("[[%s a] [b c]]", s), 4
		case "triples":
			return fmt.Sprintf("{'%s', 'a', 3, 'b', 'c', 4}", s), fmt.Sprintf("[[%s a 3] [b c 4]]", s), 6
		case "jobs":
			return fmt.Sprintf("{'%s', 'body', 5, 'rec', 'm2', false, 6, 'rec2'}", s),
				fmt.Sprintf("[{%s body true 5 rec true} {m2  false 6 rec2 true}]", s), 8
		case "raw":
			return fmt.Sprintf("{'%s', 9}", s), fmt.Sprintf("[%s 9]", s), 2
		case "arrays":
			return fmt.Sprintf("{{'%s'}, {'a', 2}}", s), fmt.Sprintf("[[%s] [a 2]]", s), 2
		}
		// rows of another shape: two of them
		shape := lua.ReplyShapes[v.Type][""]
		var lits, rows []string
		for r := range 2 {
			var fields []string
			for k, spec := range strings.Split(shape, ",") {
				f := strings.Fields(spec)
				l, w, _ := sampleValue(t, lua.ReplyValue{Name: f[0], Field: f[0], Type: f[1]}, 10*r+k, false)
				lits = append(lits, l)
				fields = append(fields, w)
			}
			rows = append(rows, "{"+strings.Join(fields, " ")+" "+fmt.Sprint(len(fields))+"}")
		}
		return "{" + strings.Join(lits, ", ") + "}", "[" + strings.Join(rows, " ") + "]", len(lits)
	}
	switch v.Type {
	case "str":
		return "'" + s + "'", s, 1
	case "int":
		return fmt.Sprint(100 + i), fmt.Sprint(100 + i), 1
	case "bool":
		return "1", "true", 1
	case "job":
		if bodyless {
			return fmt.Sprintf("{'%s', false, 42, 'rec'}", s), fmt.Sprintf("{%s  false 42 rec true}", s), lua.ReplyLen
		}
		return fmt.Sprintf("{'%s', 'body', 42, 'rec'}", s), fmt.Sprintf("{%s body true 42 rec true}", s), lua.ReplyLen
	case "strs":
		return fmt.Sprintf("{'%s', 'x'}", s), fmt.Sprintf("[%s x]", s), 1
	case "ints":
		return fmt.Sprintf("{%d, 7}", 100+i), fmt.Sprintf("[%d 7]", 100+i), 1
	case "pairs":
		return fmt.Sprintf("{'%s', 'a', 'b', 'c'}", s), fmt.Sprintf("[[%s a] [b c]]", s), 1
	case "triples":
		return fmt.Sprintf("{'%s', 'a', 3}", s), fmt.Sprintf("[[%s a 3]]", s), 1
	case "raw":
		return fmt.Sprintf("{'%s', 9}", s), fmt.Sprintf("[%s 9]", s), 1
	}
	t.Fatalf("%s: no sample of type %s", v.Name, v.Type)
	return "", "", 0
}

// canonical is a decoded value as text, a Redis message as its string or
// number, so that it compares with sampleValue's.
func canonical(x any) string {
	switch x := x.(type) {
	case []rueidis.RedisMessage:
		var out []string
		for _, m := range x {
			out = append(out, message(m))
		}
		return "[" + strings.Join(out, " ") + "]"
	case [][]rueidis.RedisMessage:
		var out []string
		for _, a := range x {
			out = append(out, canonical(a))
		}
		return "[" + strings.Join(out, " ") + "]"
	}
	v := reflect.ValueOf(x)
	if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Struct {
		var out []string
		for i := range v.Len() {
			out = append(out, canonical(v.Index(i).Interface()))
		}
		return "[" + strings.Join(out, " ") + "]"
	}
	if v.Kind() == reflect.Struct {
		var out []string
		for i := range v.NumField() {
			out = append(out, canonical(v.Field(i).Interface()))
		}
		return "{" + strings.Join(out, " ") + "}"
	}
	return fmt.Sprint(x)
}

func message(m rueidis.RedisMessage) string {
	if s, err := m.ToString(); err == nil {
		return s
	}
	if n, err := m.AsInt64(); err == nil {
		return fmt.Sprint(n)
	}
	if a, err := m.ToArray(); err == nil {
		return canonical(a)
	}
	return "?"
}
