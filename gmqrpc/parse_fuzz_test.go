package gmqrpc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/gmq/gmq/internal/budget"
	"github.com/gmq/gmq/internal/jobjson"
)

// FuzzParseJob feeds Service.Push's arguments, decoded as net/rpc decodes
// them (through JobArgs), to the job parser: it must never panic, and what it
// accepts must be in range. (Topic names are the dispatcher's to check: TestGoClient shows
// an empty one refused.)
func FuzzParseJob(f *testing.F) {
	for _, s := range []string{
		`{"id":"a_1","topic":"t","body":"x","delay":"1800","TTR":"30"}`, `{"topic":"t","body":"","TTR":1.5,"priority":"7"}`,
		`{"topic":1}`, `{"delay":"NaN","topic":"t"}`, `{"topic":"t","priority":4294967296}`,
		`{"topic":"a","Topic":"b","body":""}`, `{"topic":"t","body":"","delay":"0x1p4"}`,
		`{"topic":"t","body":{"to": "a", "n":[1,{}]}}`, `{"topic":"t","body":[]}`, `{"topic":"t","body":true}`,
		`{"topic":"t","body":{"s":"\ud800"}}`, `{"topic":"t","body":"\udc00"}`, `{"topic":"t","body":[-1e400]}`,
	} {
		f.Add([]byte(s))
	}
	def := jobjson.Defaults{TTR: time.Minute, Priority: 1024}
	f.Fuzz(func(t *testing.T, data []byte) {
		var args JobArgs
		if json.Unmarshal(data, &args) != nil || args.err != nil {
			return
		}
		j, err := jobjson.Job(args.fields, def)
		if err != nil {
			return
		}
		if j.Delay < 0 || j.TTR < 0 || j.Delay > (1<<32)*time.Second || j.TTR > (1<<32)*time.Second {
			t.Fatalf("accepted %+v from %s", j, data)
		}
		if j.BodyJSON && (!json.Valid([]byte(j.Body)) || j.Body[0] != '{' && j.Body[0] != '[') {
			t.Fatalf("a JSON body that is no object or array: %q from %s", j.Body, data)
		}
		if j.BodyJSON && jobjson.Check([]byte(j.Body)) != nil {
			t.Fatalf("a JSON body some client cannot read back: %q from %s", j.Body, data)
		}
	})
}

// FuzzReadValue frames arbitrary bytes as a connection's requests: it must
// never panic or read past the value it returns, and where the input begins
// with a JSON object, the value is that object to its last byte, as Go's
// decoder reads it (JSON-RPC clients need not end a request with a newline).
func FuzzReadValue(f *testing.F) {
	for _, s := range []string{
		`{"method":"Service.Push","params":[{"topic":"t","body":"x"}],"id":1}`, ` {"a":"}\"{"}{"next":1}`,
		`{"a":[1,{"b":"]"}]}` + "\n", `{"a":"\\"}`, `[1]`, `{`, `{"a":"\`, "\n\t {}", `x{}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := readValue(bufio.NewReader(bytes.NewReader(data)), 1<<20, &budget.Hold{}, func(bool) {})
		var want json.RawMessage
		dec := json.NewDecoder(bytes.NewReader(data))
		if dec.Decode(&want) == nil && len(want) > 0 && want[0] == '{' {
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("framed %q (%v), want %q", got, err, want)
			}
			return
		}
		if err == nil && !bytes.Contains(data, got) {
			t.Fatalf("framed %q, not in the input", got)
		}
	})
}
